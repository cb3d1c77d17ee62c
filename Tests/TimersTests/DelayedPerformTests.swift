import RunLoopCore
import Testing

@testable import RunLoopTimers

@Suite("Delayed performs")
struct DelayedPerformTests {
  @Test func delayedPerformRunsAfterItsDelayOnTheLoopThread() throws {
    let (ran, onLoopThread, pendingAfter, requestedAt, ranAt) = try onNewThread {
      loop -> (Int, Bool, Bool, ContinuousClock.Instant, ContinuousClock.Instant?) in
      let counter = Counter()
      let onThread = GuardedState(false)
      let ranAt = GuardedState<ContinuousClock.Instant?>(nil)
      let requestedAt = ContinuousClock.now
      let request = loop.perform(after: .milliseconds(20), name: "later") {
        counter.increment()
        onThread.withLock { $0 = loop.isCurrent }
        ranAt.withLock { $0 = .now }
      }
      #expect(request.isPending)
      #expect(request.name == "later")
      try loop.run(mode: .default, timeout: .seconds(5))
      return (
        counter.count, onThread.withLock { $0 }, request.isPending, requestedAt,
        ranAt.withLock { $0 }
      )
    }
    #expect(ran == 1)
    #expect(onLoopThread)
    #expect(!pendingAfter)
    let when = try #require(ranAt)
    #expect(when >= requestedAt + .milliseconds(20))
  }

  /// The default-mode rule: a delayed perform, a debouncer and a perform given no modes all
  /// wait through a run of a private mode and all run in a mode that joined the common modes.
  @Test func delayedPerformsAndDebouncersDefaultToTheCommonModesAsPerformDoes() throws {
    let log = try onNewThread { loop -> [String] in
      let log = EventLog()
      let tracking: LoopMode = "tracking"
      loop.addCommonMode(tracking)
      loop.perform(after: .zero) { log.append("delayed") }
      loop.perform { log.append("perform") }
      let debouncer = Debouncer(delay: .zero, loop: loop) { log.append("debounced") }
      debouncer.call()
      // Nothing is in "private": the run finds the mode empty and returns.
      let privateRun = try loop.run(mode: "private", timeout: .seconds(5))
      log.append("private run ended")
      let trackingRun = try loop.run(mode: tracking, timeout: .seconds(5))
      return log.all + ["\(privateRun)", "\(trackingRun)"]
    }
    #expect(log.first == "private run ended")
    #expect(log.count == 6)
    #expect(Set(log.dropFirst().prefix(3)) == ["delayed", "perform", "debounced"])
    #expect(log.suffix(2) == ["finished", "finished"])
  }

  @Test func cancelledRequestNeverRuns() throws {
    let (log, result) = try onNewThread { loop -> ([String], RunResult) in
      let log = EventLog()
      let first = loop.perform(after: .milliseconds(5)) { log.append("first") }
      loop.perform(after: .milliseconds(10)) { log.append("second") }
      first.cancel()
      first.cancel()  // twice: nothing happens
      let result = try loop.run(mode: .default, timeout: .seconds(5))
      return (log.all, result)
    }
    #expect(log == ["second"])
    #expect(result == .finished)
  }

  @Test func cancellingByKeyCancelsOnlyThatKeysEarlierRequests() throws {
    let (log, cancelled) = try onNewThread { loop -> ([String], Int) in
      let log = EventLog()
      loop.perform(after: .milliseconds(5), key: "search") { log.append("search 1") }
      loop.perform(after: .milliseconds(6), key: "search") { log.append("search 2") }
      loop.perform(after: .milliseconds(7), key: "save") { log.append("save") }
      let cancelled = loop.cancelDelayedPerforms(key: "search")
      loop.perform(after: .milliseconds(8), key: "search") { log.append("search 3") }
      try loop.run(mode: .default, timeout: .seconds(5))
      return (log.all, cancelled)
    }
    #expect(cancelled == 2)
    #expect(log == ["save", "search 3"])
  }

  @Test func delayedPerformRunsOnlyInItsModes() throws {
    let (inDefault, inModal) = try onNewThread { loop -> (Int, Int) in
      let counter = Counter()
      let modal: LoopMode = "modal"
      loop.perform(after: .zero, inModes: [modal]) { counter.increment() }
      let alive = try keepAlive(loop, mode: .default)
      try loop.run(mode: .default, timeout: .milliseconds(20))
      let inDefault = counter.count
      try loop.run(mode: modal, timeout: .seconds(5))
      alive.invalidate()
      return (inDefault, counter.count)
    }
    #expect(inDefault == 0)
    #expect(inModal == 1)
  }

  @Test func performWithNoModesSchedulesNothing() throws {
    let (pending, result) = try onNewThread { loop -> (Bool, RunResult) in
      let request = loop.perform(after: .zero, inModes: []) { Issue.record("ran") }
      return (request.isPending, try loop.run(mode: .default, timeout: .milliseconds(20)))
    }
    #expect(!pending)
    #expect(result == .finished)
  }

  @Test func performFromAnotherThreadRunsOnTheTargetLoop() throws {
    let ranOn = GuardedState<EventRunLoop?>(nil)
    let worker = RunLoopThread(name: "perform-target") { thread in
      let alive = try keepAlive(thread.runLoop, mode: .default)
      try thread.runLoop.run(mode: .default, timeout: .seconds(10))
      alive.invalidate()
    }
    try worker.start()
    let loop = worker.runLoop
    loop.perform(after: .milliseconds(5)) {
      ranOn.withLock { $0 = EventRunLoop.current }
      EventRunLoop.current.stop()
    }
    try worker.join()
    #expect(ranOn.withLock { $0 } === loop)
  }

  @Test func cancelledAndFiredKeyedRequestsAreForgotten() throws {
    let (afterCancel, afterFire, ran) = try onNewThread { loop -> (Int, Int, Int) in
      let counter = Counter()
      for _ in 0..<1000 {
        loop.perform(after: .seconds(60), key: "search") {}.cancel()
      }
      let afterCancel = keptDelayedPerforms(loop, key: "search")
      for _ in 0..<10 { loop.perform(after: .zero, key: "search") { counter.increment() } }
      try loop.run(mode: .default, timeout: .seconds(2))
      return (afterCancel, keptDelayedPerforms(loop, key: "search"), counter.count)
    }
    #expect(afterCancel == 0, "\(afterCancel) cancelled requests still kept under the key")
    #expect(ran == 10)
    #expect(afterFire == 0, "\(afterFire) requests that ran still kept under the key")
  }
}
