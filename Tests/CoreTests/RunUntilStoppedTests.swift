import Glibc
import RunLoopCore
import RunLoopTestSupport
import Synchronization
import Testing

/// A loop thread for a whole life: `runUntilStopped()` needs no source, `stop()` ends it after
/// the work queued before, `try await join()` waits without blocking a thread, and what
/// comes too late is abandoned and counted.
@Suite("Running until stopped, stopping and joining from async code")
struct RunUntilStoppedTests {
  @Test func aLoopWithNothingToWatchRunsUntilStoppedAndRunsWhatWasQueuedBefore() async throws {
    let thread = RunLoopThread(name: "until-stopped") { thread in
      try thread.runLoop.runUntilStopped()
    }
    try thread.start()
    let loop = thread.runLoop
    let ran = GuardedState<[Int]>([])
    for index in 0..<1_000 { loop.perform { ran.withLock { $0.append(index) } } }
    thread.stop()
    try await thread.join()
    #expect(ran.withLock { $0 } == Array(0..<1_000))
    #expect(loop.abandonedPerformRequests == 0)
    #expect(thread.state == .finished)
    #expect(loop.threadHasExited)
  }

  @Test func aStopMadeBeforeTheRunBeganStillEndsIt() async throws {
    let gate = Atomic<Bool>(false)
    let thread = RunLoopThread(name: "stop-early") { thread in
      while !gate.load(ordering: .acquiring) { usleep(100) }
      try thread.runLoop.runUntilStopped()
    }
    try thread.start()
    thread.stop()
    gate.store(true, ordering: .releasing)
    try await thread.join()
    #expect(thread.state == .finished)
  }

  @Test func aStopRightAfterTheStartNeverAbandonsItsOwnRequest() async throws {
    // The entry closure may see the cancellation before its first run: the stop's own
    // request must already be queued then, and run before the thread ends.
    for index in 0..<200 {
      let thread = RunLoopThread(name: "stop-at-start-\(index)") { thread in
        try thread.runLoop.runUntilStopped()
      }
      try thread.start()
      thread.stop()
      try await thread.join()
      #expect(thread.runLoop.abandonedPerformRequests == 0, "thread \(index)")
    }
  }

  @Test func requestsPerformedAfterTheThreadExitedAreAbandonedAndCounted() async throws {
    let thread = RunLoopThread(name: "abandon-count") { thread in
      try thread.runLoop.runUntilStopped()
    }
    try thread.start()
    thread.stop()
    try await thread.join()
    let requests = (0..<3).map { _ in thread.runLoop.perform {} }
    #expect(requests.allSatisfy { $0.state == .abandoned })
    #expect(thread.runLoop.abandonedPerformRequests == 3)
  }

  @Test func anAsyncJoinRethrowsTheEntryClosuresFailureAndRefusesASecondJoin() async throws {
    struct Broke: Error {}
    let thread = RunLoopThread(name: "join-fail") { _ in throw Broke() }
    try thread.start()
    await #expect(throws: RunLoopError(code: .threadFailed, message: "")) {
      try await thread.join()
    }
    await #expect(throws: RunLoopError.invalidState("")) { try await thread.join() }
  }

  @Test func runningUntilStoppedOffTheLoopsThreadThrowsNotOwningThread() throws {
    let thread = RunLoopThread(name: "not-owner") { thread in
      try thread.runLoop.runUntilStopped()
    }
    try thread.start()
    defer {
      thread.stop()
      try? thread.join()
    }
    #expect(throws: RunLoopError.notOwningThread("")) {
      try thread.runLoop.runUntilStopped()
    }
  }
}
