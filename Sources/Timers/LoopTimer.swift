import RunLoopCore
import Synchronization

/// A timer source: a closure a run loop calls at a scheduled instant, once or repeatedly, as
/// the guide's "Timer Sources" describes (the role of Foundation's `Timer` and
/// CoreFoundation's `CFRunLoopTimer`, whose names we leave to them).
///
/// A timer does nothing until it is added to a run loop in one or more modes; it fires only
/// while that loop runs in one of them, never when the loop is not running, and its first
/// fire is at its fire date (not when it is added). A timer belongs to one loop for life.
///
/// ```swift
/// let loop = EventRunLoop.current
/// let timer = try LoopTimer(fireAt: .now + .seconds(1), every: .milliseconds(100)) { timer in
///   print("tick")
/// }
/// try loop.add(timer, mode: .default)
/// try loop.run(until: .now + .seconds(2))
/// timer.invalidate()
/// ```
///
/// A repeating timer stays on its grid (`fireDate + k * interval`): firing late does not
/// shift later fires. When fires are missed (a long handler, a loop running another mode),
/// it fires once for all of them and then goes on at the next grid point in the future.
///
/// With a ``tolerance``, the timer may fire anywhere in `[fireDate, fireDate + tolerance]`;
/// the loop uses those windows to serve several timers with one wake-up.
///
/// When the thread of the timer's loop exits, the loop lets go of its timers: a timer still
/// scheduled there becomes invalid, and is freed (with what its handler captured) unless
/// someone else holds it.
///
/// Every member is safe to call from any thread. A one-shot timer is invalid by the time its
/// handler runs. A call-out that has already begun when another thread calls
/// ``invalidate()`` still completes.
public final class LoopTimer: @unchecked Sendable {
  /// The timer's name in traces (call-out records carry it).
  ///
  /// ```swift
  /// let heartbeat = try LoopTimer(fireAt: .now, every: .seconds(1), name: "heartbeat") { _ in }
  /// print(heartbeat.name)  // "heartbeat"
  /// ```
  public let name: String
  /// The repeat interval, or `nil` for a one-shot timer.
  ///
  /// ```swift
  /// if let interval = timer.interval { print("every \(interval)") }
  /// ```
  public let interval: Duration?

  let handler: @Sendable (LoopTimer) -> Void
  // Guarded by `link` before the timer joins a loop, then by `link` and the loop
  // scheduler's lock (see `_TimerEntry`). Those locks already make every access exclusive,
  // so the run-time exclusivity check (a call per access on the heaps' hot path) is off.
  @exclusivity(unchecked) var entry: _TimerEntry
  private let valid = Atomic<Bool>(true)
  // Guarded by the timer's stripe of `linkLocks` (see `withLink`): the loop the timer
  // belongs to, set once.
  private var link = _TimerLink()

  /// The locks guarding timers' links, shared by stripe (picked by the timer's address). A
  /// `GuardedState` per timer would be an object and a separately allocated mutex, about a
  /// quarter of a scheduled timer's memory; a timer's link is locked only briefly and never
  /// together with another timer's, so sharing a lock costs no deadlock and little
  /// contention. (The guarded `Int` is unused: the lock guards `link`, which must live in
  /// the timer.)
  private static let linkLocks = (0..<64).map { _ in GuardedState(0) }

  /// Runs `body` holding the timer's link lock, with its link.
  func withLink<Result, Failure: Error>(
    _ body: (inout _TimerLink) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    let address = UInt(bitPattern: ObjectIdentifier(self).hashValue)
    let stripe = Int(truncatingIfNeeded: (address >> 5) ^ (address >> 11)) & 63
    return try Self.linkLocks[stripe].withLock { _ throws(Failure) -> Result in
      try body(&link)
    }
  }

  /// Creates a timer that first fires at `fireAt` and then, if `interval` is given, every
  /// `interval` after that. Add it to a loop with ``RunLoopCore/EventRunLoop/add(_:mode:)``.
  ///
  /// - Parameters:
  ///   - fireAt: the first fire date. A date in the past fires as soon as the loop runs in
  ///     one of the timer's modes.
  ///   - interval: the repeat interval; `nil` makes a one-shot timer.
  ///   - tolerance: how late the timer may fire; a negative tolerance counts as zero, and a
  ///     repeating timer's is capped at half its interval (see ``tolerance``).
  ///   - name: the timer's name in traces.
  ///   - handler: called on the loop's thread with the timer.
  /// - Throws: ``RunLoopCore/RunLoopError/Code/invalidArgument`` when `interval` is zero or
  ///   negative (a repeating timer needs time between fires).
  ///
  /// ```swift
  /// let timer = try LoopTimer(fireAt: .now + .milliseconds(200), every: .milliseconds(200)) { _ in
  ///   refresh()
  /// }
  /// ```
  public init(
    fireAt: ContinuousClock.Instant, every interval: Duration? = nil,
    tolerance: Duration = .zero, name: String = "timer",
    _ handler: @escaping @Sendable (LoopTimer) -> Void
  ) throws(RunLoopError) {
    if let interval, interval <= .zero {
      throw .invalidArgument("a repeating timer needs a positive interval, not \(interval)")
    }
    self.name = name
    self.interval = interval
    self.handler = handler
    self.entry = _TimerEntry(
      fireDate: fireAt, tolerance: Self.clamped(tolerance, interval: interval))
  }

  /// `tolerance` made valid: at least zero and, for a repeating timer, at most half the
  /// interval, as CoreFoundation's `CFRunLoopTimerSetTolerance` does. A wider window would
  /// let the loop wake after the next grid point too, and that fire would be skipped.
  static func clamped(_ tolerance: Duration, interval: Duration?) -> Duration {
    let tolerance = max(tolerance, .zero)
    guard let interval else { return tolerance }
    return min(tolerance, interval / 2)
  }

  /// Whether the timer repeats.
  ///
  /// ```swift
  /// if !timer.repeats { print("fires once") }
  /// ```
  public var repeats: Bool { interval != nil }

  /// Whether the timer can still fire: `false` after ``invalidate()`` and after a one-shot
  /// timer fired.
  ///
  /// ```swift
  /// if timer.isValid { timer.invalidate() }
  /// ```
  public var isValid: Bool { valid.load(ordering: .acquiring) }

  /// The run loop the timer was added to, or `nil` before it is added anywhere (and once
  /// that loop has been freed, after its thread exited).
  ///
  /// ```swift
  /// assert(timer.runLoop === EventRunLoop.current)
  /// ```
  public var runLoop: EventRunLoop? { withLink { $0.loop } }

  /// The scheduler of the timer's loop, while the loop's thread runs.
  var scheduler: _TimerScheduler? { withLink { $0.scheduler } }

  /// The next scheduled fire date. Setting it reschedules the timer (a repeating timer's grid
  /// starts again from the new date); on an invalid timer, setting it does nothing. While
  /// the timer is suspended, setting it sets the time left to `newValue - now`.
  ///
  /// ```swift
  /// timer.fireDate = .now + .seconds(5)  // postpone
  /// ```
  public var fireDate: ContinuousClock.Instant {
    get { withEntry { $0.fireDate } }
    set { _ = reschedule(fireDate: newValue, tolerance: nil) }
  }

  /// How late after its fire date the timer may fire (Foundation's `tolerance`). The loop
  /// wakes inside `[fireDate, fireDate + tolerance]` and fires every timer whose fire date
  /// has passed by then, so timers with overlapping windows share a wake-up. Negative values
  /// count as zero; a repeating timer's tolerance is capped at half its interval (as in
  /// CoreFoundation), so that a window never reaches the next grid point.
  ///
  /// ```swift
  /// timer.tolerance = .milliseconds(50)  // 10% of a 500 ms interval
  /// ```
  public var tolerance: Duration {
    get { withEntry { $0.tolerance } }
    set { _ = reschedule(fireDate: nil, tolerance: Self.clamped(newValue, interval: interval)) }
  }

  /// Whether the timer is suspended (see ``suspend()``).
  ///
  /// ```swift
  /// timer.isSuspended ? timer.resume() : timer.suspend()
  /// ```
  public var isSuspended: Bool { withEntry { $0.suspendedRemaining != nil } }

  /// Stops the timer for good and takes it out of its loop. Safe from any thread; calling it
  /// again does nothing. A call-out that has already begun on the loop's thread completes.
  ///
  /// ```swift
  /// timer.invalidate()
  /// assert(!timer.isValid)
  /// ```
  public func invalidate() {
    guard markInvalid() else { return }
    // One load of the weak reference: each costs a trip through the scheduler's side table.
    let scheduler = withLink { link -> _TimerScheduler? in
      let scheduler = link.scheduler
      scheduler?.state.withLock { $0.unlinkAll(self) }
      return scheduler
    }
    // A loop sleeping with nothing else to wait for should notice its mode is now empty.
    scheduler?.wakeIfNeeded(true)
  }

  /// Calls the handler now, on the calling thread, without changing a repeating timer's
  /// schedule (Foundation's `fire()`). A one-shot timer is invalidated first, so it will not
  /// fire again. An invalid timer does nothing.
  ///
  /// ```swift
  /// refreshTimer.fire()  // refresh now, keep the regular refreshes
  /// ```
  public func fire() {
    guard isValid else { return }
    if interval == nil { invalidate() }
    if let loop = runLoop, loop.isCurrent {
      loop.withCallout(.timer, name: name, dueAt: nil) { handler(self) }
    } else {
      handler(self)
    }
  }

  /// Pauses the timer, keeping the time left until its next fire date (the workbook's
  /// countdown "pause"). A suspended timer does not fire and does not keep a run loop's mode
  /// from being empty (a run in a mode it leaves empty returns, even when suspended from
  /// another thread). Suspending a suspended or invalid timer does nothing.
  ///
  /// ```swift
  /// countdown.suspend()
  /// // later
  /// countdown.resume()  // next tick comes after the time that was left
  /// ```
  public func suspend() {
    guard isValid else { return }
    let now = ContinuousClock.now
    let (unlinked, scheduler) = withScheduleState { state, attached -> Bool in
      guard entry.suspendedRemaining == nil else { return false }
      entry.suspendedRemaining = max(.zero, entry.fireDate - now)
      guard attached else { return false }
      state.unlinkAll(self)
      return true
    }
    // The mode may now be empty: a sleeping loop should notice.
    scheduler?.wakeIfNeeded(unlinked)
  }

  /// Resumes a suspended timer: its next fire date becomes now plus the time that was left
  /// when it was suspended, and a repeating timer continues on a grid from there. Resuming a
  /// timer that is not suspended, or an invalid one, does nothing.
  ///
  /// ```swift
  /// countdown.resume()
  /// ```
  public func resume() {
    guard isValid else { return }
    let now = ContinuousClock.now
    let (earlier, scheduler) = withScheduleState { state, attached -> Bool in
      // Invalidated since the check above: `invalidate()` clears the flag before it takes
      // the locks, so either it unlinks after this, or this sees the flag cleared.
      guard isValid, let remaining = entry.suspendedRemaining else { return false }
      entry.suspendedRemaining = nil
      entry.fireDate = now + remaining
      guard attached else { return false }
      entry.sequence = state.takeSequence()
      return state.relink(self)
    }
    scheduler?.wakeIfNeeded(earlier)
  }

  // MARK: Internals

  /// Clears the valid flag; returns whether this call cleared it.
  func markInvalid() -> Bool {
    valid.exchange(false, ordering: .acquiringAndReleasing)
  }

  /// Reads the entry under the right locks.
  private func withEntry<Result>(_ body: (_TimerEntry) -> Result) -> Result {
    withScheduleState { _, _ in body(entry) }.0
  }

  /// Runs `body` holding `link` and, once the timer belongs to a loop, that loop's
  /// scheduler lock; `attached` tells which (a detached timer gets an empty scratch state).
  /// Returns the scheduler too. A timer whose loop's thread has exited (its scheduler is
  /// gone) is invalidated first: it can never fire again.
  @discardableResult
  private func withScheduleState<Result>(
    _ body: (_ state: inout _SchedulerState, _ attached: Bool) -> Result
  ) -> (Result, _TimerScheduler?) {
    withLink { link -> (Result, _TimerScheduler?) in
      guard let scheduler = link.scheduler else {
        if link.loopID != nil { _ = markInvalid() }
        var scratch = _SchedulerState()
        return (body(&scratch, false), nil)
      }
      return (scheduler.state.withLock { body(&$0, true) }, scheduler)
    }
  }

  /// Changes the fire date and/or the tolerance. Returns `false` when the timer is invalid
  /// (nothing changed).
  func reschedule(fireDate: ContinuousClock.Instant?, tolerance: Duration?) -> Bool {
    guard isValid else { return false }
    let now = ContinuousClock.now
    let ((changed, earlier), scheduler) = withScheduleState { state, attached -> (Bool, Bool) in
      guard isValid else { return (false, false) }
      let newDate = fireDate ?? entry.fireDate
      let newTolerance = tolerance ?? entry.tolerance
      if entry.suspendedRemaining != nil {
        if let fireDate { entry.suspendedRemaining = max(.zero, fireDate - now) }
        entry.fireDate = newDate
        entry.tolerance = newTolerance
        return (true, false)
      }
      guard attached else {
        entry.fireDate = newDate
        entry.tolerance = newTolerance
        return (true, false)
      }
      return (true, state.reschedule(self, fireDate: newDate, tolerance: newTolerance))
    }
    scheduler?.wakeIfNeeded(earlier)
    return changed
  }
}

/// Which loop a timer belongs to, guarded by the timer's link lock (`LoopTimer.withLink`). The references are weak: the
/// scheduler holds the timer, and the loop holds the scheduler until its thread exits. The
/// loop's id stays, so a timer never joins a second loop, even once the first is gone.
struct _TimerLink {
  weak var scheduler: _TimerScheduler?
  weak var loop: EventRunLoop?
  var loopID: UInt64?
}
