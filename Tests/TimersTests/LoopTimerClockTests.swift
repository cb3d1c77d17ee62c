import AsyncAlgorithms
import RunLoopCore
import RunLoopTestSupport
import Synchronization
import Testing

@testable import RunLoopTimers

/// A loop's timers as a `Clock`: `Task.sleep` and swift-async-algorithms' `debounce` run on
/// one-shot timers of the loop, with the sleep's tolerance, and a cancelled sleep takes its
/// timer off the loop.
@Suite("A loop's clock")
struct LoopTimerClockTests {
  @Test func taskSleepOnTheLoopsClockResumesAfterTheDeadline() async throws {
    let worker = try startLoopThread(name: "clock-sleep")
    defer { stopLoopThread(worker) }
    let clock = worker.runLoop.clock
    let start = clock.now
    try await Task.sleep(for: .milliseconds(20), tolerance: .milliseconds(5), clock: clock)
    #expect(clock.now >= start + .milliseconds(20))
  }

  @Test func cancellingASleepOnTheClockEndsItWithCancellationError() async throws {
    let worker = try startLoopThread(name: "clock-cancel")
    defer { stopLoopThread(worker) }
    let clock = worker.runLoop.clock
    let sleeping = Task { try await clock.sleep(until: .now + .seconds(3600), tolerance: nil) }
    try await Task.sleep(for: .milliseconds(20))
    sleeping.cancel()
    await #expect(throws: CancellationError.self) { try await sleeping.value }
  }

  @Test func debounceOnTheLoopsClockKeepsTheLastValueOfEachBurst() async throws {
    let worker = try startLoopThread(name: "clock-debounce")
    defer { stopLoopThread(worker) }
    let clock = worker.runLoop.clock
    let input = AsyncChannel<Int>()
    let debounced = input.debounce(for: .milliseconds(500), clock: clock)
    let results = GuardedState<[Int]>([])
    let consumer = Task {
      for await value in debounced { results.withLock { $0.append(value) } }
    }
    for burst in 0..<3 {
      for value in 1...5 { await input.send(burst * 10 + value) }
      #expect(await eventuallyAsync { results.withLock { $0.contains(burst * 10 + 5) } })
    }
    input.finish()
    await consumer.value
    // Each burst's last value comes out once its quiet period passed on the loop's timers.
    // A loaded machine may pause inside a burst for longer than the window, which lets an
    // earlier value of that burst out too: the values stay in order and none repeats.
    let values = results.withLock { $0 }
    #expect(values == values.sorted() && Set(values).count == values.count)
    #expect([5, 15, 25].allSatisfy(values.contains))
    #expect(values.allSatisfy { (1...25).contains($0) })
  }
}
