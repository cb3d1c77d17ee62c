import RunLoopCore
import Testing

@testable import RunLoopTimers

/// What happens to timers and delayed performs when their loop's thread exits: the loop lets
/// go of them, so they are freed with whatever their handlers captured.
@Suite("Timers of a loop whose thread exited")
struct ThreadExitTests {
  @Test func scheduledRepeatingTimerIsFreedWithItsCapturesWhenItsThreadExits() throws {
    let sentinel = WeakBox()
    let timer = WeakBox()
    try onNewThread { loop in
      let captured = Sentinel()
      let repeating = try LoopTimer(fireAt: .now + .seconds(3600), every: .seconds(1)) { _ in
        _ = captured
      }
      sentinel.set(captured)
      timer.set(repeating)
      try loop.add(repeating, modes: [.default, .common])
      try loop.run(mode: .default, timeout: .milliseconds(5))
    }
    #expect(
      eventually(2) { sentinel.isNil && timer.isNil },
      "timer alive: \(!timer.isNil), capture alive: \(!sentinel.isNil)")
  }

  @Test func pendingDelayedPerformsAreFreedWhenTheirThreadExits() throws {
    let plain = WeakBox()
    let keyed = WeakBox()
    try onNewThread { loop in
      let first = Sentinel()
      let second = Sentinel()
      plain.set(first)
      keyed.set(second)
      loop.perform(after: .seconds(3600)) { _ = first }
      loop.perform(after: .seconds(3600), key: "search") { _ = second }
    }
    #expect(eventually(2) { plain.isNil && keyed.isNil })
  }

  @Test func heldTimerBecomesInvalidAndStaysBoundToItsExitedLoop() throws {
    let (timer, request, loop) = try onNewThread {
      loop -> (LoopTimer, DelayedPerform, EventRunLoop) in
      let timer = try LoopTimer(fireAt: .now + .seconds(3600), every: .seconds(1)) { _ in }
      try loop.add(timer, mode: .default)
      let request = loop.perform(after: .seconds(3600)) {}
      #expect(timer.isValid)
      #expect(request.isPending)
      return (timer, request, loop)
    }
    // Nothing can fire on that loop any more.
    #expect(!timer.isValid)
    #expect(!request.isPending)
    // It cannot join its own loop again, nor another one.
    #expect(throws: RunLoopError.loopThreadExited("")) { try loop.add(timer, mode: .default) }
    try onNewThread { other in
      #expect(throws: RunLoopError.invalidated("")) { try other.add(timer, mode: .default) }
    }
  }

  @Test func timerOutOfEveryModeAtExitStillBelongsToItsLoop() throws {
    // Removed from its mode, the timer is not scheduled, so it stays valid; the loop's
    // identity still keeps it from joining another loop.
    let timer = try onNewThread { loop -> LoopTimer in
      let timer = try LoopTimer(fireAt: .now + .seconds(3600)) { _ in }
      try loop.add(timer, mode: .default)
      loop.remove(timer, mode: .default)
      return timer
    }
    #expect(timer.isValid)
    try onNewThread { other in
      #expect(throws: RunLoopError.alreadyInUse("")) { try other.add(timer, mode: .default) }
    }
  }

  @Test func suspendedTimerOfAnExitedLoopCannotBeResumed() throws {
    let timer = try onNewThread { loop -> LoopTimer in
      let timer = try LoopTimer(fireAt: .now + .seconds(3600), every: .seconds(1)) { _ in }
      try loop.add(timer, mode: .default)
      timer.suspend()
      return timer
    }
    timer.resume()
    #expect(!timer.isValid)
  }

  @Test func exitedLoopGetsNoFreshSchedulerFromDelayedPerforms() throws {
    // The loop never had timers, so no scheduler, when its thread exited.
    let loop = try onNewThread { loop in loop }
    #expect(loop.threadHasExited)
    let request = loop.perform(after: .zero, key: "search") {}
    #expect(!request.isPending)
    #expect(loop.cancelDelayedPerforms(key: "search") == 0)
    #expect(!hasTimerScheduler(loop))
    #expect(loop.deadlineSources.isEmpty)
  }

  @Test func captureWhoseDeinitUsesTheLoopIsFreedWithoutDeadlock() throws {
    let freed = GuardedState(false)
    let exited = GuardedState(false)
    let thread = RunLoopThread(name: "deinit") { thread in
      let loop = thread.runLoop
      let captured = LoopToucher(loop: loop) { freed.withLock { $0 = true } }
      let timer = try LoopTimer(fireAt: .now + .seconds(3600)) { _ in _ = captured }
      try loop.add(timer, mode: .default)
    }
    try thread.start()
    // The timer, and what it captured, are freed as the thread exits. The capture's deinit
    // asks the loop something: that must not find the loop's lock held.
    let done = eventually(3) { freed.withLock { $0 } }
    #expect(done, "the capture was not freed, or its deinit is stuck on the loop's lock")
    if done {
      try thread.join()
      exited.withLock { $0 = true }
    }
    #expect(exited.withLock { $0 })
  }
}

/// Asks its loop a question when it is freed.
private final class LoopToucher: Sendable {
  let loop: EventRunLoop
  let onDeinit: @Sendable () -> Void

  init(loop: EventRunLoop, onDeinit: @escaping @Sendable () -> Void) {
    self.loop = loop
    self.onDeinit = onDeinit
  }

  deinit {
    _ = loop.isRunning
    onDeinit()
  }
}
