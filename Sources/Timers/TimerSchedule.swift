/// When a timer fires: a date, an interval for a repeating timer, and a tolerance. The timer
/// may fire anywhere in `[date, date + tolerance]`, never before `date`; a repeating timer's
/// next date is the first point of its grid (`date + k * interval`) after the moment its
/// call-out returned.
///
/// This is the value the rest of the module reasons with. ``LoopTimer`` stores it packed into
/// 16 bytes (see `PackedSchedule`); the heaps order timers by `key`, the date in whole
/// nanoseconds of the loop clock.
struct TimerSchedule: Equatable {
  /// The next fire date, as an offset from ``TimerClock/origin`` (exact, to the attosecond).
  var date: Duration
  /// The repeat interval; `nil` for a one-shot timer. Fixed when the timer is made.
  let interval: Duration?
  /// How late the timer may fire; never negative, and for a repeating timer at most half
  /// its interval (see ``LoopTimer/clamped(_:interval:)``).
  var tolerance: Duration

  /// The date as a heap key: whole nanoseconds, rounded up so that the timer never fires
  /// before its date.
  var key: Int64 { TimerClock.key(of: date).key }

  /// The end of the timer's window as a key: rounded down, so the loop never wakes after
  /// the window, and never before the date's key.
  var latestKey: Int64 {
    guard tolerance > .zero else { return key }
    return max(key, TimerClock.key(of: date + tolerance, roundingUp: false).key)
  }

  /// Moves a repeating timer's date to its first grid point later than `now` (a key):
  /// missed points are skipped, so an overrun costs one late fire, not a burst.
  mutating func advance(after now: Int64) {
    guard let interval else { return }
    date = TimerClock.offset(
      of: TimerClock.nextGridPoint(
        from: TimerClock.instant(at: date), after: TimerClock.instant(at: .nanoseconds(now)),
        interval: interval))
  }
}
