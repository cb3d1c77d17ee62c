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
}
