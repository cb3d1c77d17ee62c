import RunLoopCore

/// Delayed performs: the guide's `performSelector:withObject:afterDelay:inModes:` and
/// `cancelPreviousPerformRequestsWithTarget:`, for closures.
extension EventRunLoop {
  /// Runs `block` on this loop's thread once `delay` has passed and the loop runs in one of
  /// `modes`. Safe from any thread. Built on a one-shot ``LoopTimer``, so it obeys the same
  /// rules: it never runs while the loop is not running in one of `modes`.
  ///
  /// - Parameters:
  ///   - delay: how long to wait; zero or negative means "at the next pass".
  ///   - modes: the modes in which it may run, the common modes by default, as for
  ///     `perform(_:)`; an empty list schedules nothing and returns a request that is already
  ///     cancelled.
  ///   - key: a group for ``cancelDelayedPerforms(key:)`` (the guide's "target").
  ///   - name: the request's name in traces.
  ///   - block: the work.
  /// - Returns: a handle to cancel this one request. If this loop's thread has exited, the
  ///   request is already cancelled (nothing is scheduled and nothing is kept). A request
  ///   still pending when the thread exits is cancelled then, and `block` is released.
  ///
  /// ```swift
  /// let loop = EventRunLoop.current
  /// loop.perform(after: .milliseconds(300), key: "search") { search() }
  /// ```
  @discardableResult
  public func perform(
    after delay: Duration, inModes modes: [LoopMode] = [.common], key: String? = nil,
    name: String = "delayedPerform", _ block: @escaping @Sendable () -> Void
  ) -> DelayedPerform {
    // A one-shot timer never throws at creation. The handler finds the scheduler through
    // the timer: capturing it would make a cycle (scheduler, timer, handler) that nothing
    // breaks if the request never runs.
    let timer = try! LoopTimer(fireAt: .now + delay, name: name) { timer in
      // A request that has started is no longer pending: its timer ends here, not after
      // the block (as a plain one-shot timer's does).
      timer.invalidate()
      if let key { timer.scheduler?.forget(timer, key: key) }
      block()
    }
    let request = DelayedPerform(key: key, timer: timer)
    guard !modes.isEmpty, let scheduler = TimerScheduler.of(self) else {
      timer.invalidate()
      return request
    }
    if let key {
      // Not after the scheduler shut down: nothing would ever take the timer out again.
      scheduler.state.withLock { state in
        guard !state.exited else { return }
        state.delayedByKey[key, default: []].append(timer)
      }
    }
    do {
      try add(timer, modes: modes)
    } catch {
      // Only a loop whose thread has exited refuses a fresh timer.
      if let key { scheduler.forget(timer, key: key) }
      timer.invalidate()
    }
    return request
  }

  /// Cancels every pending delayed perform made on this loop with `key` (the guide's
  /// `cancelPreviousPerformRequestsWithTarget:`). Safe from any thread. Returns how many were
  /// cancelled: 0 on a loop whose thread has exited (its requests were cancelled then).
  ///
  /// ```swift
  /// loop.cancelDelayedPerforms(key: "search")
  /// loop.perform(after: .milliseconds(300), key: "search") { search() }
  /// ```
  @discardableResult
  public func cancelDelayedPerforms(key: String) -> Int {
    guard let scheduler = TimerScheduler.existing(of: self) else { return 0 }
    let timers = scheduler.state.withLock { $0.delayedByKey.removeValue(forKey: key) ?? [] }
    var cancelled = 0
    for timer in timers where timer.isValid {
      timer.invalidate()
      cancelled += 1
    }
    return cancelled
  }
}

extension TimerScheduler {
  /// Removes a delayed perform's timer from its key's list (when it fires or is cancelled).
  func forget(_ timer: LoopTimer, key: String) {
    state.withLock { state in
      guard var list = state.delayedByKey[key] else { return }
      list.removeAll { $0 === timer }
      state.delayedByKey[key] = list.isEmpty ? nil : list
    }
  }
}
