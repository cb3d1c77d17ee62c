/// The rarely used parts of a timer's schedule, in an object of their own that a timer gets
/// only when it first needs one: a tolerance, a suspension, a second mode key, a fire date
/// that is not a whole number of nanoseconds from ``_TimerClock/origin`` (or is out of the
/// `Int64` range), or an interval that does not fit the timer's tagged word (see
/// `LoopTimer.tail`). Most timers never need it, and then cost one object of 88 bytes and
/// one 16-byte heap node. Once made, it stays until the timer is freed, so that later
/// changes (and fires) allocate nothing.
///
/// Guarded like the rest of the schedule (see ``LoopTimer``): by the timer's stripe lock
/// before the timer joins a loop, by the loop's scheduler lock after. `interval` is set at
/// creation and never changes, so it is read without a lock.
final class _TimerExtras {
  /// The interval, when the timer repeats and its word no longer holds it.
  let interval: Duration?
  /// How late the timer may fire; never negative.
  var tolerance: Duration = .zero
  /// Time left when suspended; `nil` while running.
  var suspendedRemaining: Duration?
  /// The fire date's exact offset from ``_TimerClock/origin``, when its key (whole
  /// nanoseconds, rounded up, saturated) is not exact; `nil` when the key is exact.
  var exactFireOffset: Duration?
  /// Position of the wake node of the timer's inline slot, -1 when it has none.
  var firstWakeIndex: Int32 = -1
  /// The timer's slots after its inline one (a timer in several mode keys).
  var rest: [_TimerSlot] = []

  init(interval: Duration?) {
    self.interval = interval
  }
}

/// A timer's membership in one mode key of one loop (a concrete mode or `.common`).
/// Positions are stored as `Int32` (a heap never holds 2^31 timers).
struct _TimerSlot {
  private let storedHeapIndex: Int32
  private var storedFireIndex: Int32
  private var storedWakeIndex: Int32
  /// Whether the timer is (still) in that mode.
  var active: Bool
  /// Whether `fireIndex` is a position in the tolerant timers' fire heap (else in the
  /// exact timers' heap): the tolerance the timer had when it was linked.
  var tolerant: Bool

  init(
    heapIndex: Int, active: Bool, fireIndex: Int = -1, wakeIndex: Int = -1,
    tolerant: Bool = false
  ) {
    self.storedHeapIndex = Int32(heapIndex)
    self.storedFireIndex = Int32(fireIndex)
    self.storedWakeIndex = Int32(wakeIndex)
    self.active = active
    self.tolerant = tolerant
  }

  /// Position of the mode key's heaps in the scheduler's table.
  var heapIndex: Int { Int(storedHeapIndex) }
  /// Position in the fire-order heap (exact or fire), -1 when not in it.
  var fireIndex: Int {
    get { Int(storedFireIndex) }
    set { storedFireIndex = Int32(newValue) }
  }
  /// Position in the wake-order heap, -1 when not in it.
  var wakeIndex: Int {
    get { Int(storedWakeIndex) }
    set { storedWakeIndex = Int32(newValue) }
  }
}

/// The origin timer keys count from, and conversions between instants and keys.
///
/// `ContinuousClock.Instant` is a resilient type of the concurrency library: a struct
/// holding one has no layout known at compile time, so every copy, comparison and field
/// access of a heap node would go through value witnesses and metadata. Keys are `Int64`
/// nanoseconds from a fixed instant instead: 8 bytes, where a `Duration` takes 16, and
/// `ContinuousClock.now` on Linux is a whole number of nanoseconds, so the keys of the usual
/// fire dates (`now` plus a delay in whole nanoseconds) are exact. A fire date that is not
/// keeps its exact offset in the timer's ``_TimerExtras``, with a key rounded up, so that it
/// never fires early; one beyond about 292 years from the origin keeps a saturated key.
enum _TimerClock {
  /// Any fixed instant; the process's first use of the timers.
  static let origin = ContinuousClock.now

  static func offset(of instant: ContinuousClock.Instant) -> Duration {
    origin.duration(to: instant)
  }

  static func instant(at offset: Duration) -> ContinuousClock.Instant {
    origin.advanced(by: offset)
  }

  /// The instant of a key.
  static func instant(atKey key: Int64) -> ContinuousClock.Instant {
    origin.advanced(by: .nanoseconds(key))
  }

  /// The key of `offset`: whole nanoseconds, rounded up (or down), saturated to the `Int64`
  /// range; `exact` tells whether the key is the offset itself.
  static func key(of offset: Duration, roundingUp: Bool = true) -> (key: Int64, exact: Bool) {
    let (quotient, remainder) = offset.attoseconds.quotientAndRemainder(
      dividingBy: 1_000_000_000)
    var nanoseconds = quotient
    // The quotient is rounded toward zero.
    if roundingUp && remainder > 0 { nanoseconds += 1 }
    if !roundingUp && remainder < 0 { nanoseconds -= 1 }
    guard let key = Int64(exactly: nanoseconds) else {
      return (nanoseconds > 0 ? .max : .min, false)
    }
    return (key, remainder == 0)
  }

  /// The key of `instant`, rounded up.
  static func key(of instant: ContinuousClock.Instant) -> Int64 {
    key(of: offset(of: instant)).key
  }

  /// `duration` in whole nanoseconds when it is one, in `1..<2^62`; else `nil`.
  static func smallNanoseconds(_ duration: Duration) -> Int64? {
    let (key, exact) = key(of: duration)
    guard exact, key > 0, key < 1 << 62 else { return nil }
    return key
  }

  /// The first grid point (`fireDate + k * interval`, k >= 1) strictly after `now`. Skipping
  /// the missed grid points is what makes an overrun cost one late fire, not a burst.
  ///
  /// Constant time however far in the past the fire date is: with `gap = now - fireDate`,
  /// the next grid point is `now + (interval - gap % interval)`, computed exactly on the
  /// 128-bit attosecond counts (`Duration` itself has no `%`).
  static func nextGridPoint(
    from fireDate: ContinuousClock.Instant, after now: ContinuousClock.Instant,
    interval: Duration
  ) -> ContinuousClock.Instant {
    guard now >= fireDate else { return fireDate + interval }
    let step = interval.attoseconds
    let remainder = (now - fireDate).attoseconds % step
    return now + Duration(attoseconds: step - remainder)
  }

  /// ``nextGridPoint(from:after:interval:)`` on exact keys, in 64-bit arithmetic (the usual
  /// case: whole nanoseconds); `nil` when a step would leave the `Int64` range.
  static func nextGridKey(from fireKey: Int64, after nowKey: Int64, interval: Int64) -> Int64? {
    guard nowKey >= fireKey else {
      let (next, overflow) = fireKey.addingReportingOverflow(interval)
      return overflow ? nil : next
    }
    let (gap, gapOverflow) = nowKey.subtractingReportingOverflow(fireKey)
    guard !gapOverflow else { return nil }
    let (next, overflow) = nowKey.addingReportingOverflow(interval - gap % interval)
    return overflow ? nil : next
  }
}
