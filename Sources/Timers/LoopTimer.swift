import Glibc
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
/// shift later fires. When fires are missed (a loop busy elsewhere or running another mode),
/// it fires once for all of them and then goes on at the next grid point in the future. Its
/// next fire date is computed when its handler returns, as the first grid point after that
/// moment (as in CoreFoundation): a handler that overran its period is followed by the next
/// grid point, not by a late fire at once. While its handler runs, the timer does not fire
/// again, not even in a run the handler starts.
///
/// With a ``tolerance``, the timer may fire anywhere in `[fireDate, fireDate + tolerance]`;
/// the loop uses those windows to serve several timers with one wake-up.
///
/// When the thread of the timer's loop exits, the loop lets go of its timers: a timer still
/// scheduled there becomes invalid, and is freed (with what its handler captured) unless
/// someone else holds it.
///
/// Every member is safe to call from any thread. A one-shot timer becomes invalid when its
/// handler returns (inside it, ``isValid`` is still `true`, as in CoreFoundation). A call-out
/// that has already begun when another thread calls ``invalidate()`` still completes.
public final class LoopTimer: @unchecked Sendable {
  // Layout: 16 bytes of object header and 72 of fields, 88 bytes in all (a 96-byte block of
  // malloc's), in declaration order. The fields the heaps and cancellation touch come first,
  // next to the header's reference count, so that they share its cache line; the name and
  // handler, read only to fire, come last. Keep new fields out of here unless every timer
  // needs them (they belong in `TimerExtras`): 8 more bytes make the block 112.

  /// The scheduler of the loop the timer joined, set once by the first add and kept for
  /// life (so the timer never joins a second loop). A strong reference: the scheduler has no
  /// side table, so loading it costs a plain retain, where a weak reference took the slow
  /// path on every load. The cycle it makes with the scheduler's heaps is broken when the
  /// timer leaves them, and at the latest when the loop's thread exits (see
  /// `TimerSchedulerPlug`).
  /// (The address of the scheduler, owning one retain; or `detached` (0), or `changing`
  /// (1) while a thread changes the schedule of a timer that belongs to no loop. Not
  /// `AtomicLazyReference`: its methods are generic calls that look its metadata up on every
  /// load.)
  private let attachment = Atomic<UInt>(LoopTimer.detached)
  // The fields below are guarded by the attachment word before the timer joins a loop (a
  // thread that changes the schedule moves the word from `detached` to `changing` and back,
  // see `withScheduleState`), then by the loop scheduler's lock. A join moves the word from
  // `detached` to the scheduler's address and then links the timer under the scheduler's
  // lock, so it never overlaps a change made while detached, and every later change takes
  // that lock. Both already make every access exclusive, so the run-time exclusivity check
  // (a call per access on the heaps' hot path) is off.
  /// The schedule (date, interval, tolerance) and the time left while suspended.
  @exclusivity(unchecked) var packed: PackedSchedule
  /// Insertion sequence: breaks ties of equal dates so that they fire in the order they
  /// were scheduled. Renewed whenever the date changes; 0 until first scheduled.
  @exclusivity(unchecked) var sequence: UInt64 = 0
  /// The timer's position in its queue's heap, -1 when not linked (written by `TimerHeap`).
  @exclusivity(unchecked) var heapIndex: Int32 = -1
  /// The position of the queue of the timer's set of modes in its scheduler, `noQueue`
  /// while it is in no mode.
  @exclusivity(unchecked) var queue: UInt16 = LoopTimer.noQueue
  private let valid = Atomic<Bool>(true)
  /// The timer's name in traces (call-out records carry it).
  ///
  /// ```swift
  /// let heartbeat = try LoopTimer(fireAt: .now, every: .seconds(1), name: "heartbeat") { _ in }
  /// print(heartbeat.name)  // "heartbeat"
  /// ```
  public let name: String
  let handler: @Sendable (LoopTimer) -> Void

  static let noQueue: UInt16 = .max
  /// The attachment word of a timer that belongs to no loop.
  static let detached: UInt = 0
  /// The attachment word while a thread changes a detached timer's schedule.
  static let changing: UInt = 1

  /// Creates a timer that first fires at `fireAt` and then, if `interval` is given, every
  /// `interval` after that. Add it to a loop with ``RunLoopCore/EventRunLoop/add(_:mode:)``.
  ///
  /// - Parameters:
  ///   - fireAt: the first fire date. A date in the past is replaced by the creation time,
  ///     as CoreFoundation does: the timer fires as soon as the loop runs in one of its
  ///     modes, a repeating timer's grid starts at its creation, and timers made with past
  ///     dates fire in the order they were made, whatever order they were added in.
  ///   - interval: the repeat interval; `nil` makes a one-shot timer.
  ///   - tolerance: how late the timer may fire; a negative tolerance counts as zero, and a
  ///     repeating timer's is capped at half its interval (see ``tolerance``).
  ///   - name: the timer's name in traces.
  ///   - handler: called on the loop's thread with the timer.
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` when `interval` is zero or
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
    self.handler = handler
    let tolerance = tolerance.attoseconds > 0 ? Self.clamped(tolerance, interval: interval) : .zero
    var schedule = TimerSchedule(
      date: TimerClock.offset(of: fireAt), interval: interval, tolerance: tolerance)
    var packed = PackedSchedule(schedule)
    let now = TimerClock.nowKey()
    if packed.key <= now {
      schedule.date = .nanoseconds(now)
      packed.schedule = schedule
    }
    // Only a timer made in a context some instrument keeps (one atomic load otherwise) pays
    // for the extras that carry it to the firings.
    if let origin = CalloutCause.captureIfContexts() { packed.cause = origin }
    self.packed = packed
  }

  deinit {
    if let pointer = Self.schedulerAddress(attachment.load(ordering: .acquiring)) {
      Unmanaged<TimerScheduler>.fromOpaque(pointer).release()
    }
    packed.release()
  }

  /// `tolerance` made valid: at least zero and, for a repeating timer, at most half the
  /// interval, as CoreFoundation's `CFRunLoopTimerSetTolerance` does. A wider window would
  /// let the loop wake after the next grid point too, and that fire would be skipped.
  static func clamped(_ tolerance: Duration, interval: Duration?) -> Duration {
    let tolerance = max(tolerance, .zero)
    guard let interval else { return tolerance }
    return min(tolerance, interval / 2)
  }

  /// The repeat interval, or `nil` for a one-shot timer.
  ///
  /// ```swift
  /// if let interval = timer.interval { print("every \(interval)") }
  /// ```
  public var interval: Duration? { withScheduleState { _, _ in packed.interval }.0 }

  /// Whether the timer repeats.
  ///
  /// ```swift
  /// if !timer.repeats { print("fires once") }
  /// ```
  public var repeats: Bool { interval != nil }

  /// Whether the timer can still fire: `false` after ``invalidate()`` and once a one-shot
  /// timer's handler has returned (inside that handler it is still `true`).
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
  public var runLoop: EventRunLoop? { scheduler?.loop }

  /// Whether the timer keeps part of its schedule in a `TimerExtras` (for tests of the
  /// layout).
  var hasExtras: Bool { withScheduleState { _, _ in packed.hasExtras }.0 }

  /// The scheduler of the loop the timer joined (kept after that loop's thread exits).
  var scheduler: TimerScheduler? { attached() }

  /// The next scheduled fire date. Setting it reschedules the timer (a repeating timer's grid
  /// starts again from the new date); on an invalid timer, setting it does nothing. While
  /// the timer is suspended, setting it sets the time left to `newValue - now`.
  ///
  /// ```swift
  /// timer.fireDate = .now + .seconds(5)  // postpone
  /// ```
  public var fireDate: ContinuousClock.Instant {
    get { withScheduleState { _, _ in TimerClock.instant(at: packed.schedule.date) }.0 }
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
    get { withScheduleState { _, _ in packed.schedule.tolerance }.0 }
    set { _ = reschedule(fireDate: nil, tolerance: Self.clamped(newValue, interval: interval)) }
  }

  /// Whether the timer is suspended (see ``suspend()``).
  ///
  /// ```swift
  /// timer.isSuspended ? timer.resume() : timer.suspend()
  /// ```
  public var isSuspended: Bool { withScheduleState { _, _ in packed.suspendedRemaining != nil }.0 }

  /// Stops the timer for good and takes it out of its loop. Safe from any thread; calling it
  /// again does nothing. A call-out that has already begun on the loop's thread completes.
  ///
  /// ```swift
  /// timer.invalidate()
  /// assert(!timer.isValid)
  /// ```
  public func invalidate() {
    guard markInvalid() else { return }
    // A join on another thread that has not attached the timer yet sees the flag cleared
    // when it looks under the scheduler's lock (both this exchange and this load, and the
    // join's attaching exchange and its load of the flag, are sequentially consistent), and
    // does not link it.
    let word = attachment.load(ordering: .sequentiallyConsistent)
    guard let pointer = Self.schedulerAddress(word) else { return }
    // The timer owns a retain of its scheduler for life, so the scheduler outlives this
    // call without one of its own (each retain and release is an atomic operation on the
    // scheduler, shared by all its timers).
    Unmanaged<TimerScheduler>.fromOpaque(pointer)._withUnsafeGuaranteedRef { scheduler in
      let unlinked = scheduler.state.withLock { $0.unlink(self) }
      // A loop sleeping with nothing else to wait for should notice its mode is now empty.
      scheduler.wakeIfNeeded(unlinked)
    }
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
    if !repeats { invalidate() }
    if let loop = runLoop, loop.isCurrent {
      let origin = withScheduleState { _, _ in packed.cause }.0
      loop.withCallout(
        .timer, name: name, dueAt: nil, cause: origin?.cause, contexts: origin?.contexts
      ) { handler(self) }
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
      guard packed.suspendedRemaining == nil else { return false }
      packed.suspendedRemaining = max(.zero, TimerClock.instant(at: packed.schedule.date) - now)
      guard attached else { return false }
      return state.unlink(self)
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
      // Invalidated since the check above: `invalidate()` clears the flag before it looks
      // for the timer's scheduler, so either it unlinks after this (under the scheduler's
      // lock), or this sees the flag cleared.
      guard isValid, let remaining = packed.suspendedRemaining else { return false }
      packed.suspendedRemaining = nil
      packed.schedule.date = TimerClock.offset(of: now + remaining)
      guard attached else { return false }
      sequence = state.takeSequence()
      return state.link(self)
    }
    scheduler?.wakeIfNeeded(earlier)
  }

  // MARK: Joining a loop, and the lock that guards the schedule

  /// Clears the valid flag; returns whether this call cleared it.
  func markInvalid() -> Bool {
    valid.exchange(false, ordering: .sequentiallyConsistent)
  }

  /// Runs `body` holding what guards the schedule: the scheduler's lock once the timer
  /// belongs to a loop (`attached` is then `true`), else the attachment word moved to
  /// `changing` (and `state` is an empty scratch state). Returns the scheduler too. A timer
  /// whose loop's thread has exited is invalidated first (it can never fire again) and is
  /// not attached.
  @discardableResult
  private func withScheduleState<Result>(
    _ body: (_ state: inout SchedulerState, _ attached: Bool) -> Result
  ) -> (Result, TimerScheduler?) {
    var waits = 0
    while true {
      if let scheduler = attached() { return (locked(scheduler, body), scheduler) }
      let (exchanged, found) = attachment.compareExchange(
        expected: Self.detached, desired: Self.changing, ordering: .acquiringAndReleasing)
      if exchanged {
        var scratch = SchedulerState()
        let result = body(&scratch, false)
        attachment.store(Self.detached, ordering: .releasing)
        return (result, nil)
      }
      // Another thread is changing the detached schedule: let it finish. A timer that
      // joined a loop meanwhile goes through the scheduler's lock.
      if found == Self.changing { Self.waitForChange(&waits) }
    }
  }

  /// Waits a moment for another thread's change to a detached timer's schedule: a few
  /// stores and at most one allocation (the timer's extras), no call-out. Yields first;
  /// after 64 yields it sleeps 50 µs at a time, so that a waiter of higher priority on the
  /// same CPU (a real-time thread, which `sched_yield` would hand the CPU straight back to)
  /// lets the changing thread run.
  private static func waitForChange(_ waits: inout Int) {
    waits += 1
    if waits <= 64 { sched_yield() } else { usleep(50) }
  }

  private func locked<Result>(
    _ scheduler: TimerScheduler,
    _ body: (_ state: inout SchedulerState, _ attached: Bool) -> Result
  ) -> Result {
    scheduler.state.withLock { state in
      guard !state.exited else {
        _ = markInvalid()
        return body(&state, false)
      }
      return body(&state, true)
    }
  }

  /// The scheduler the timer joined, if any.
  private func attached() -> TimerScheduler? {
    guard let pointer = Self.schedulerAddress(attachment.load(ordering: .acquiring)) else {
      return nil
    }
    return Unmanaged<TimerScheduler>.fromOpaque(pointer).takeUnretainedValue()
  }

  /// The scheduler's address in an attachment word, or `nil` when the word says detached.
  private static func schedulerAddress(_ word: UInt) -> UnsafeRawPointer? {
    word == detached || word == changing ? nil : UnsafeRawPointer(bitPattern: word)
  }

  /// Joins `scheduler` (the scheduler of `loop`) in `mode`. Returns whether a wake-up
  /// deadline moved earlier.
  func join(_ scheduler: TimerScheduler, loop: EventRunLoop, mode: LoopMode)
    throws(RunLoopError) -> Bool
  {
    let own = UInt(bitPattern: Unmanaged.passUnretained(scheduler).toOpaque())
    var current = attachment.load(ordering: .acquiring)
    if Self.schedulerAddress(current) == nil { current = try attach(scheduler) }
    guard current == own else { throw foreignLoopError(loop) }
    // Checked under the lock `invalidate()` unlinks under: either it finds this timer
    // linked, or this sees the flag cleared (sequentially consistent: see `invalidate()`).
    return try scheduler.state.withLock { state throws(RunLoopError) -> Bool in
      guard valid.load(ordering: .sequentiallyConsistent) else { throw invalidError() }
      guard !state.exited else { throw exitedError(loop) }
      return state.add(self, to: mode)
    }
  }

  /// Attaches the timer to `scheduler` unless it is attached already; returns the address
  /// of the scheduler it is attached to. Waits while another thread changes the detached
  /// schedule, so that the change is complete, and seen, before the join reads it.
  private func attach(_ scheduler: TimerScheduler) throws(RunLoopError) -> UInt {
    // The retain the attachment owns for the timer's life, taken before the address is
    // published and given back if another scheduler's address got there first.
    let retained = Unmanaged.passRetained(scheduler)
    let own = UInt(bitPattern: retained.toOpaque())
    var waits = 0
    while true {
      guard isValid else {
        retained.release()
        throw invalidError()
      }
      let (exchanged, found) = attachment.compareExchange(
        expected: Self.detached, desired: own, ordering: .sequentiallyConsistent)
      if exchanged { return own }
      if found != Self.changing {
        retained.release()
        return found
      }
      Self.waitForChange(&waits)
    }
  }

  private func invalidError() -> RunLoopError {
    .invalidated("timer '\(name)' is invalid; create a new timer instead")
  }

  private func exitedError(_ loop: EventRunLoop) -> RunLoopError {
    .loopThreadExited("\(loop)'s thread has exited; timer '\(name)' would never fire")
  }

  /// Why the timer cannot join `loop`: it is attached to another scheduler.
  private func foreignLoopError(_ loop: EventRunLoop) -> RunLoopError {
    guard isValid else { return invalidError() }
    guard let owner = attached() else { return invalidError() }
    // A loop has one scheduler: another one of this loop's id is the scheduler of this
    // loop before its thread exited.
    guard owner.loopID != loop.id else { return exitedError(loop) }
    let other = owner.loop.map { "\($0)" } ?? "a loop that no longer exists"
    return .alreadyInUse("timer '\(name)' belongs to \(other); it cannot join \(loop)")
  }

  /// Changes the fire date and/or the tolerance. Returns `false` when the timer is invalid
  /// (nothing changed).
  func reschedule(fireDate: ContinuousClock.Instant?, tolerance: Duration?) -> Bool {
    guard isValid else { return false }
    let ((changed, earlier), scheduler) = withScheduleState { state, attached -> (Bool, Bool) in
      guard isValid else { return (false, false) }
      var schedule = packed.schedule
      if let fireDate { schedule.date = TimerClock.offset(of: fireDate) }
      if let tolerance { schedule.tolerance = tolerance }
      guard attached, packed.suspendedRemaining == nil else {
        // Only a suspended timer keeps its new date as time left: the clock is read then.
        if let fireDate, packed.suspendedRemaining != nil {
          packed.suspendedRemaining = max(.zero, fireDate - .now)
        }
        packed.schedule = schedule
        return (true, false)
      }
      return (true, state.reschedule(self, to: schedule))
    }
    scheduler?.wakeIfNeeded(earlier)
    return changed
  }
}
