import RunLoopCore

/// Adding timers to a run loop (Foundation's `add(_:forMode:)`, CoreFoundation's
/// `CFRunLoopAddTimer`).
extension EventRunLoop {
  /// Adds `timer` to this loop in `mode`, which may be ``/RunLoopCore/LoopMode/common``.
  /// Safe from any thread; a sleeping loop wakes if the timer is due before it would have.
  ///
  /// Adding a timer to a mode it is already in does nothing. A timer may be in several modes
  /// of one loop, never in two loops.
  ///
  /// ```swift
  /// let timer = try LoopTimer(fireAt: .now + .seconds(1), every: .seconds(1)) { _ in tick() }
  /// try loop.add(timer, mode: .common)  // fires in every common mode, like a scrolling UI
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/alreadyInUse`` when the timer belongs to
  ///   another loop, ``/RunLoopCore/RunLoopError/Code/invalidated`` when it was invalidated
  ///   (or a one-shot timer already fired), ``/RunLoopCore/RunLoopError/Code/loopThreadExited``
  ///   when this loop's thread has exited.
  public func add(_ timer: LoopTimer, mode: LoopMode) throws(RunLoopError) {
    guard let scheduler = TimerScheduler.of(self) else {
      // Built only when thrown: describing the loop costs more than adding the timer.
      throw .loopThreadExited("\(self)'s thread has exited; timer '\(timer.name)' would never fire")
    }
    let earlier = try timer.join(scheduler, loop: self, mode: mode)
    scheduler.wakeIfNeeded(earlier)
  }

  /// Adds `timer` to each of `modes` (see ``add(_:mode:)``).
  ///
  /// ```swift
  /// try loop.add(timer, modes: [.default, "tracking"])
  /// ```
  public func add(_ timer: LoopTimer, modes: [LoopMode]) throws(RunLoopError) {
    for mode in modes { try add(timer, mode: mode) }
  }

  /// Takes `timer` out of `mode` of this loop (CoreFoundation's `CFRunLoopRemoveTimer`). The
  /// timer stays valid and belongs to this loop; it can be added again. Does nothing when
  /// the timer is not in that mode of this loop. Safe from any thread: a sleeping loop wakes,
  /// so that a run in a mode this leaves empty returns.
  ///
  /// ```swift
  /// loop.remove(timer, mode: "tracking")
  /// ```
  public func remove(_ timer: LoopTimer, mode: LoopMode) {
    guard let scheduler = timer.scheduler, scheduler.loopID == id,
      scheduler.state.withLock({ $0.remove(timer, from: mode) })
    else { return }
    scheduler.wakeIfNeeded(true)
  }

  /// Whether `timer` is in `mode` of this loop, directly (not through `.common`).
  ///
  /// ```swift
  /// #expect(loop.contains(timer, mode: .default))
  /// ```
  public func contains(_ timer: LoopTimer, mode: LoopMode) -> Bool {
    guard let scheduler = timer.scheduler, scheduler.loopID == id else { return false }
    return scheduler.state.withLock { $0.modes(of: timer).contains(mode) }
  }
}
