import Glibc
import RunLoopCore
import RunLoopTestSupport
import RunLoopTimers
import Synchronization
import Testing

/// Counts a loop's timer call-outs by name, with the pass each ran in.
@Suite("Timers for tasks: ticks and sleep")
struct AsyncTimerTests {
  @Test func ticksArriveInOrderAndLeavingTheLoopInvalidatesTheTimer() async throws {
    let recorder = LoopRecorder(.callouts)
    let worker = try startLoopThread(name: "ticks") { $0.addInstrument(recorder) }
    defer { stopLoopThread(worker) }
    let ticks = worker.runLoop.ticks(every: .milliseconds(5), name: "tick-order")
    var seen: [ContinuousClock.Instant] = []
    for await tick in ticks {
      seen.append(tick)
      if seen.count == 3 { break }
    }
    #expect(seen.count == 3)
    #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 < $1 })
    #expect(ticks.isFinished)
    // The timer is gone: its call-outs stop (after the record of one that was running).
    try await Task.sleep(for: .milliseconds(20))
    let fired = recorder.callouts(.timer, named: "tick-order").count
    try await Task.sleep(for: .milliseconds(50))
    #expect(recorder.callouts(.timer, named: "tick-order").count == fired)
  }

  @Test func aSlowConsumerFindsTheLatestTickAndTheMissedOnesAreCounted() async throws {
    let worker = try startLoopThread(name: "slow-ticks")
    defer { stopLoopThread(worker) }
    let ticks = worker.runLoop.ticks(every: .milliseconds(2), buffering: .newest(1))
    #expect(await eventuallyAsync { ticks.droppedCount >= 5 })
    var iterator = ticks.makeAsyncIterator()
    let first = await iterator.next()
    #expect(first != nil)
    let second = await iterator.next()
    #expect(second.map { $0 > first! } == true)
  }

  @Test func cancellingTheConsumingTaskEndsTheTicks() async throws {
    let recorder = LoopRecorder(.callouts)
    let worker = try startLoopThread(name: "cancel-ticks") { $0.addInstrument(recorder) }
    defer { stopLoopThread(worker) }
    let ticks = worker.runLoop.ticks(every: .milliseconds(5), name: "cancelled-ticks")
    let consumer = Task {
      var count = 0
      for await _ in ticks { count += 1 }
      return count
    }
    #expect(
      await eventuallyAsync { recorder.callouts(.timer, named: "cancelled-ticks").count >= 2 })
    consumer.cancel()
    _ = await consumer.value
    #expect(ticks.isFinished)
    try await Task.sleep(for: .milliseconds(20))
    let fired = recorder.callouts(.timer, named: "cancelled-ticks").count
    try await Task.sleep(for: .milliseconds(50))
    #expect(recorder.callouts(.timer, named: "cancelled-ticks").count == fired)
  }

  @Test func aTickSequenceReleasedWithoutBeingIteratedInvalidatesItsTimer() async throws {
    let recorder = LoopRecorder(.callouts)
    let worker = try startLoopThread(name: "dropped-ticks") { $0.addInstrument(recorder) }
    defer { stopLoopThread(worker) }
    do {
      let ticks = worker.runLoop.ticks(every: .milliseconds(5), name: "dropped")
      #expect(await eventuallyAsync { recorder.callouts(.timer, named: "dropped").count >= 2 })
      #expect(!ticks.isFinished)
    }
    try await Task.sleep(for: .milliseconds(20))
    let fired = recorder.callouts(.timer, named: "dropped").count
    try await Task.sleep(for: .milliseconds(50))
    #expect(recorder.callouts(.timer, named: "dropped").count == fired)
  }

  @Test func ticksOnALoopWhoseThreadExitedEndAtOnce() async throws {
    let loop = try onNewThread("gone") { $0 }
    let ticks = loop.ticks(every: .milliseconds(1))
    var iterator = ticks.makeAsyncIterator()
    #expect(await iterator.next() == nil)
  }

  @Test func sleepResumesFromALoopTimerAfterItsDuration() async throws {
    let recorder = LoopRecorder(.callouts)
    let worker = try startLoopThread(name: "sleep") { $0.addInstrument(recorder) }
    defer { stopLoopThread(worker) }
    let start = ContinuousClock.now
    try await worker.runLoop.sleep(for: .milliseconds(20))
    #expect(ContinuousClock.now - start >= .milliseconds(20))
    #expect(await eventuallyAsync { recorder.callouts(.timer, named: "sleep").count == 1 })
  }

  @Test func aSleepWithToleranceWakesWithAnotherTimerOfItsWindow() async throws {
    // A plain timer at 150 ms and a sleep of 60 ms that tolerates 120 ms: the idle loop
    // wakes once, for the timer, and ends the sleep in the same pass. (Long enough that the
    // loop is asleep again, even under ThreadSanitizer, before the sleep's window opens.)
    let recorder = LoopRecorder(.callouts)
    let worker = try startLoopThread(name: "tolerant-sleep") { $0.addInstrument(recorder) }
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    let timer = try LoopTimer(fireAt: .now + .milliseconds(150), name: "anchor") { _ in }
    try loop.add(timer, mode: .default)
    try await loop.sleep(for: .milliseconds(60), tolerance: .milliseconds(120))
    #expect(
      await eventuallyAsync {
        recorder.callouts(.timer, named: "anchor").count == 1
          && recorder.callouts(.timer, named: "sleep").count == 1
      })
    #expect(
      recorder.callouts(.timer, named: "anchor").map(\.iteration)
        == recorder.callouts(.timer, named: "sleep").map(\.iteration))
  }

  @Test func aSleepWaitsWhileTheLoopRunsAnotherMode() async throws {
    let inPrivate = Atomic<Bool>(false)
    let leave = Atomic<Bool>(false)
    let worker = try startLoopThread(name: "sleep-modes") { loop in
      try loop.add(CustomInputSource {}, mode: "private")
      let _: PerformRequest = loop.perform(inModes: [.default]) {
        inPrivate.store(true, ordering: .releasing)
        while !leave.load(ordering: .acquiring) {
          _ = try? loop.run(mode: "private", timeout: .milliseconds(5))
        }
      }
    }
    defer { stopLoopThread(worker) }
    _ = await eventuallyAsync { inPrivate.load(ordering: .acquiring) }
    let woke = GuardedState(false)
    let sleeper = Task {
      try await worker.runLoop.sleep(for: .milliseconds(5), inModes: [.default])
      woke.withLock { $0 = true }
    }
    try await Task.sleep(for: .milliseconds(60))
    #expect(woke.withLock { $0 } == false)
    leave.store(true, ordering: .releasing)
    try await sleeper.value
    #expect(woke.withLock { $0 })
  }

  @Test func cancellingASleepingTaskThrowsCancellationAndInvalidatesTheTimer() async throws {
    let recorder = LoopRecorder(.callouts)
    let worker = try startLoopThread(name: "cancel-sleep") { $0.addInstrument(recorder) }
    defer { stopLoopThread(worker) }
    let sleeper = Task { try await worker.runLoop.sleep(for: .seconds(60)) }
    try await Task.sleep(for: .milliseconds(20))
    sleeper.cancel()
    await #expect(throws: CancellationError.self) { try await sleeper.value }
    #expect(recorder.callouts(.timer, named: "sleep").count == 0)
  }

  @Test func sleepingOnALoopWhoseThreadExitedThrows() async throws {
    let loop = try onNewThread("gone-sleep") { $0 }
    await #expect(throws: RunLoopError.loopThreadExited("")) {
      try await loop.sleep(for: .milliseconds(1))
    }
  }
}
