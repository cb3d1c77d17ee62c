/// A timer's schedule: what the scheduler orders it by, and where it sits in each heap.
///
/// Locking: before the timer joins a loop, the timer's `link` lock guards the entry; from
/// then on every access also holds the loop's scheduler lock (the timer's own methods take
/// `link` then the scheduler lock; the loop's firing path takes only the scheduler lock).
/// The entry never leaves those locks, hence `@unchecked Sendable`.
final class _TimerEntry: @unchecked Sendable {
  /// The next scheduled fire date (the grid point, never the actual firing time).
  var fireDate: ContinuousClock.Instant
  /// How late the timer may fire; never negative.
  var tolerance: Duration
  /// The repeat interval; `nil` for a one-shot timer. Always positive.
  let interval: Duration?
  /// Insertion sequence: breaks ties of equal deadlines so that they fire in the order they
  /// were scheduled. Renewed whenever the fire date changes.
  var sequence: UInt64 = 0
  /// Time left when suspended; `nil` while running.
  var suspendedRemaining: Duration?
  /// One slot per mode key the timer was added to (slots are never removed, only
  /// deactivated, so heap nodes can refer to them by position).
  var slots: [_TimerSlot] = []

  init(fireDate: ContinuousClock.Instant, tolerance: Duration, interval: Duration?) {
    self.fireDate = fireDate
    self.tolerance = tolerance
    self.interval = interval
  }

  /// The latest instant the timer may fire: the end of its tolerance window.
  var latest: ContinuousClock.Instant { fireDate + tolerance }

  /// The first grid point (`fireDate + k * interval`, k >= 1) strictly after `now`. Skipping
  /// the missed grid points is what makes an overrun cost one late fire, not a burst.
  ///
  /// Constant time however far in the past the fire date is: with `gap = now - fireDate`,
  /// the next grid point is `now + (interval - gap % interval)`, computed exactly on the
  /// 128-bit attosecond counts (`Duration` itself has no `%`).
  func nextGridPoint(after now: ContinuousClock.Instant, interval: Duration)
    -> ContinuousClock.Instant
  {
    guard now >= fireDate else { return fireDate + interval }
    let step = interval.attoseconds
    let remainder = (now - fireDate).attoseconds % step
    return now + Duration(attoseconds: step - remainder)
  }
}

/// A timer's membership in one mode key of one loop (a concrete mode or `.common`).
struct _TimerSlot {
  /// Position of the mode key's heaps in the scheduler's table.
  let heapIndex: Int
  /// Whether the timer is (still) in that mode.
  var active: Bool
  /// Position in the fire-order heap, -1 when not in it.
  var fireIndex: Int = -1
  /// Position in the wake-order heap, -1 when not in it.
  var wakeIndex: Int = -1
}
