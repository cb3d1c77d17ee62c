import RunLoopCore

/// The origin timer keys count from, and conversions between instants and keys.
///
/// Keys are ``LoopClock`` readings (the origin is the instant of reading 0), so the loop's
/// deadlines and its `now` pass between the scheduler and the loop with no conversion.
///
/// `ContinuousClock.Instant` is a resilient type of the concurrency library: a struct
/// holding one has no layout known at compile time, so every copy, comparison and field
/// access of a heap node would go through value witnesses and metadata. Keys are `Int64`
/// nanoseconds from a fixed instant instead: 8 bytes, where a `Duration` takes 16, and
/// `ContinuousClock.now` on Linux is a whole number of nanoseconds, so the keys of the usual
/// fire dates (`now` plus a delay in whole nanoseconds) are exact. A fire date that is not
/// gets a key rounded up, so that it never fires early, and its exact value stays in the
/// timer's ``PackedSchedule``; one beyond about 292 years from the origin keeps a
/// saturated key.
enum TimerClock {
  /// The instant of ``LoopClock`` reading 0.
  static let origin = LoopClock.instant(ofNanoseconds: 0)

  /// The key of the current instant: the loop clock's reading.
  static func nowKey() -> Int64 { LoopClock.now() }

  /// A key as a deadline for the loop: at least 1 (0 means "unset" to the loop), and no
  /// further than the loop clock takes any instant (a saturated key is centuries away).
  static func deadline(ofKey key: Int64) -> Int64 {
    min(max(key, 1), 1 << 61)
  }

  static func offset(of instant: ContinuousClock.Instant) -> Duration {
    origin.duration(to: instant)
  }

  static func instant(at offset: Duration) -> ContinuousClock.Instant {
    origin.advanced(by: offset)
  }

  /// The key of `offset`: whole nanoseconds, rounded up (or down), saturated to the `Int64`
  /// range; `exact` tells whether the key is the offset itself.
  static func key(of offset: Duration, roundingUp: Bool = true) -> (key: Int64, exact: Bool) {
    let (nanoseconds, exact) = LoopClock.nanoseconds(
      of: offset, rounded: roundingUp ? .up : .down)
    return (nanoseconds, exact)
  }

  /// The key of `offset` (rounded up) and what it leaves below the nanosecond: `0` when
  /// the key is exact, else the attoseconds past the nanosecond before the key
  /// (`offset == key - 1 ns + fraction`), or `nil` when the key is saturated.
  static func keyAndFraction(of offset: Duration) -> (key: Int64, fraction: UInt?) {
    // Every date of a timer made this side of the origin and within about 292 years of it:
    // one 128-by-64-bit division, without the general conversion's rounding-rule enum (a
    // type of the standard library, whose every use looks up its metadata).
    let attoseconds = offset.attoseconds
    if attoseconds >= 0, attoseconds >> 64 < 1_000_000_000 {
      let (quotient, remainder) = UInt64(1_000_000_000).dividingFullWidth(
        (UInt64(truncatingIfNeeded: attoseconds >> 64), UInt64(truncatingIfNeeded: attoseconds)))
      if quotient < UInt64(Int64.max) {
        return remainder == 0 ? (Int64(quotient), 0) : (Int64(quotient) + 1, UInt(remainder))
      }
    }
    let (key, exact) = key(of: offset)
    if exact { return (key, 0) }
    guard key != .max, key != .min else { return (key, nil) }
    // The true difference is below 10^9, so 64-bit wrapping arithmetic computes it exactly.
    let fraction =
      UInt64(truncatingIfNeeded: offset.attoseconds)
      &- UInt64(bitPattern: key &- 1) &* 1_000_000_000
    guard fraction > 0, fraction < 1_000_000_000 else { return (key, nil) }
    return (key, UInt(fraction))
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
