import Dispatch
import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTimers
import Testing

/// Statements of the articles that a test can hold them to (the articles name these tests).
@Suite("Documentation claims")
struct DocumentationClaimTests {
  /// ThreadManagement.md, Table 2-1: a secondary thread's stack is the soft RLIMIT_STACK.
  @Test func secondaryThreadStackIsTheStackLimitByDefault() throws {
    var limit = rlimit()
    #expect(getrlimit(Int32(RLIMIT_STACK.rawValue), &limit) == 0)
    // RLIM_INFINITY is all ones.
    let finite = limit.rlim_cur != rlim_t.max
    try #require(finite && limit.rlim_cur >= 16 * 1024, "no finite stack limit to compare")
    let soft = Int(limit.rlim_cur)
    let seen = GuardedState(0)
    let thread = RunLoopThread(name: "default-stack") { _ in
      seen.withLock { $0 = RunLoopThread.currentStackSize }
    }
    try thread.start()
    try thread.join()
    #expect(seen.withLock { $0 } == soft)
  }

  /// UsingRunLoopObjects.md (Table 3-2) and WhenToUseARunLoop.md: a perform request queued
  /// before a pass runs after step 3's notification and before step 4's custom sources.
  @Test func performRequestQueuedBeforeAPassRunsBeforeTheCustomSources() throws {
    let order = GuardedState<[String]>([])
    let worker = RunLoopThread(name: "claims") { thread in
      let loop = thread.runLoop
      let source = CustomInputSource(name: "source") { order.withLock { $0.append("source") } }
      try loop.add(source, mode: .default)
      let observer = LoopObserver(activities: [.beforeSources], name: "step-3") { _, _ in
        order.withLock { $0.append("beforeSources") }
      }
      loop.add(observer, mode: .default)
      source.signal()
      loop.perform(inModes: [.default]) { order.withLock { $0.append("perform") } }
      _ = try loop.run(mode: .default, timeout: .zero)
      observer.invalidate()
      source.invalidate()
    }
    try worker.start()
    try worker.join()
    #expect(order.withLock { $0 } == ["beforeSources", "perform", "source"])
  }

  /// Demo.md and the README: a timer alone fires at its fire date; its tolerance lets it share
  /// a wake-up, it does not make it late by the tolerance.
  @Test func loneTimerWithToleranceFiresAtItsFireDateNotAtTheEndOfItsWindow() throws {
    let lateness = GuardedState<Duration?>(nil)
    let worker = RunLoopThread(name: "tolerance") { thread in
      let due = ContinuousClock.now + .milliseconds(50)
      let timer = try LoopTimer(fireAt: due, tolerance: .seconds(1), name: "lone") { _ in
        lateness.withLock { $0 = ContinuousClock.now - due }
      }
      try thread.runLoop.add(timer, mode: .default)
      _ = try thread.runLoop.run(mode: .default, timeout: .seconds(5))
    }
    try worker.start()
    try worker.join()
    let late = try #require(lateness.withLock { $0 })
    #expect(late >= .zero && late < .milliseconds(500), "fired \(late) after its fire date")
  }

  /// InputSources.md: a pass performs the sources signalled when its step 4 began; one that a
  /// call-out of that step signals waits for the next pass, even when its order comes later.
  @Test func sourceSignalledByACalloutOfStep4WaitsForTheNextPass() throws {
    let order = GuardedState<[String]>([])
    let worker = RunLoopThread(name: "step-4") { thread in
      let loop = thread.runLoop
      let later = CustomInputSource(name: "later", order: 1) {
        order.withLock { $0.append("later") }
      }
      let first = CustomInputSource(name: "first", order: 0) {
        order.withLock { $0.append("first") }
        later.signal()
      }
      try loop.add(first, mode: .default)
      try loop.add(later, mode: .default)
      first.signal()
      _ = try loop.run(mode: .default, timeout: .zero)
      order.withLock { $0.append(later.isSignalled ? "pass-end:signalled" : "pass-end:idle") }
      _ = try loop.run(mode: .default, timeout: .zero)
      first.invalidate()
      later.invalidate()
    }
    try worker.start()
    try worker.join()
    #expect(order.withLock { $0 } == ["first", "pass-end:signalled", "later"])
  }

  /// UsingRunLoopObjects.md and WhenToUseARunLoop.md: a stop queued as a perform request
  /// before the loop runs is not lost (a bare `stop()` then would be): it ends the first run.
  @Test func stopQueuedAsAPerformRequestBeforeTheLoopRunsEndsItsFirstRun() throws {
    let queued = DispatchSemaphore(value: 0)
    let result = GuardedState<RunResult?>(nil)
    let worker = RunLoopThread(name: "queued-stop") { thread in
      let loop = thread.runLoop
      let keepAlive = CustomInputSource(name: "keep-alive") {}
      try loop.add(keepAlive, mode: .default)
      queued.wait()
      let outcome = try loop.run(until: .now + .seconds(10))
      result.withLock { $0 = outcome }
      keepAlive.invalidate()
    }
    try worker.start()
    worker.runLoop.stop()  // not running yet: forgotten
    worker.runLoop.perform { EventRunLoop.current.stop() }
    queued.signal()
    try worker.join()
    #expect(result.withLock { $0 } == .stopped)
  }

  /// UsingRunLoopObjects.md: a cancelled request of a mode the loop never runs leaves the
  /// queue the next time the loop takes a batch of requests, in any mode.
  @Test func cancelledRequestOfAnotherModeLeavesTheQueueAtTheNextBatchInAnyMode() throws {
    let counts = GuardedState<[Int]>([])
    let worker = RunLoopThread(name: "drop-cancelled") { thread in
      let loop = thread.runLoop
      let keepAlive = CustomInputSource(name: "keep-alive") {}
      try loop.add(keepAlive, mode: .default)
      let request = loop.perform(inModes: ["report"]) {}
      let cancelled = request.cancel()
      counts.withLock { $0.append(loop.queuedPerformRequests) }
      _ = try loop.run(mode: .default, timeout: .zero)
      counts.withLock { $0.append(loop.queuedPerformRequests) }
      counts.withLock { $0.append(cancelled && request.state == .cancelled ? 1 : 0) }
      keepAlive.invalidate()
    }
    try worker.start()
    try worker.join()
    // Queued while cancelled, gone after one pass in another mode, and never run.
    #expect(counts.withLock { $0 } == [1, 0, 1])
  }

  /// ThreadManagement.md and WhenToUseARunLoop.md: `start()` returns with the thread's loop
  /// created, before the entry closure necessarily runs, and work queued on it then runs on
  /// that thread.
  @Test func threadsLoopExistsWhenStartReturnsBeforeTheEntryRuns() throws {
    let entered = GuardedState(false)
    let release = DispatchSemaphore(value: 0)
    let ranOnWorker = GuardedState(false)
    let worker = RunLoopThread(name: "loop-first") { thread in
      release.wait()
      entered.withLock { $0 = true }
      _ = try thread.runLoop.run(mode: .default, timeout: .zero)
    }
    try worker.start()
    let loop = worker.runLoop
    #expect(!entered.withLock { $0 })
    #expect(!loop.isCurrent && !loop.threadHasExited)
    loop.perform(inModes: [.default]) {
      ranOnWorker.withLock { $0 = EventRunLoop.current === loop }
    }
    release.signal()
    try worker.join()
    #expect(ranOnWorker.withLock { $0 })
  }

  /// WhenToUseARunLoop.md: a `performAndWait` already waiting on a thread whose loop never
  /// runs does not wait for ever: the thread's exit abandons the request and the wait throws
  /// `loopThreadExited`.
  @Test func performAndWaitBlockedOnAThreadThatExitsThrowsLoopThreadExited() throws {
    let release = DispatchSemaphore(value: 0)
    let target = RunLoopThread(name: "never-runs") { _ in release.wait() }
    try target.start()
    let loop = target.runLoop
    let outcome = GuardedState<String?>(nil)
    let waiter = RunLoopThread(name: "waiter") { _ in
      do throws(RunLoopError) {
        try loop.performAndWait {}
        outcome.withLock { $0 = "ran" }
      } catch {
        outcome.withLock { $0 = error.code.identifier }
      }
    }
    try waiter.start()
    // The request is in the queue, so the waiter waits on it, before the target exits.
    while loop.queuedPerformRequests == 0 { usleep(1_000) }
    release.signal()
    try target.join()
    try waiter.join()
    #expect(outcome.withLock { $0 } == RunLoopError.Code.loopThreadExited.identifier)
    #expect(loop.threadHasExited && loop.queuedPerformRequests == 0)
  }
}
