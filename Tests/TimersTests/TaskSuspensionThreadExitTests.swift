import RunLoopCore
import RunLoopTestSupport
import Testing

@testable import RunLoopTimers

/// Suspensions on a loop's timers end with `loopThreadExited` when the loop's thread exits:
/// a sleep throws, a ticks sequence ends and says why.
@Suite("Sleeps and ticks of a loop whose thread exits")
struct TaskSuspensionThreadExitTests {
  private func worker(_ name: String) throws -> RunLoopThread {
    let thread = RunLoopThread(name: name) { thread in try thread.runLoop.runUntilStopped() }
    try thread.start()
    return thread
  }

  @Test func aSleepThrowsLoopThreadExitedWhenTheThreadExitsDuringIt() async throws {
    let thread = try worker("sleep-exit")
    let loop = thread.runLoop
    let sleeping = Task { try await loop.sleep(for: .seconds(3600)) }
    // The sleep's timer is on the loop once the loop ran a request queued after it.
    try await Task.sleep(for: .milliseconds(50))
    try await loop.submit {}
    thread.stop()
    try await thread.join()
    await #expect(throws: RunLoopError.loopThreadExited("")) { try await sleeping.value }
  }

  @Test func aSleepOnALoopWhoseThreadHasExitedThrowsAtOnce() async throws {
    let thread = try worker("sleep-exited")
    thread.stop()
    try await thread.join()
    await #expect(throws: RunLoopError.loopThreadExited("")) {
      try await thread.runLoop.sleep(for: .seconds(3600))
    }
  }

  @Test func aTicksSequenceEndsWithLoopThreadExitedWhenTheThreadExits() async throws {
    let thread = try worker("ticks-exit")
    let loop = thread.runLoop
    let ticks = loop.ticks(every: .milliseconds(2))
    var seen = 0
    for await _ in ticks {
      seen += 1
      if seen == 3 { thread.stop() }
    }
    try await thread.join()
    #expect(seen >= 3)
    #expect(ticks.failure?.code == .loopThreadExited)
  }

  @Test func aTicksSequenceOfAnExitedLoopIsEmptyAndSaysWhy() async throws {
    let thread = try worker("ticks-exited")
    thread.stop()
    try await thread.join()
    let ticks = thread.runLoop.ticks(every: .milliseconds(1))
    var seen = 0
    for await _ in ticks { seen += 1 }
    #expect(seen == 0)
    #expect(ticks.failure?.code == .loopThreadExited)
  }
}
