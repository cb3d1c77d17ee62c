import CRunLoopLinux
import Glibc

/// The loop's one clock: `CLOCK_BOOTTIME` in nanoseconds, the clock `ContinuousClock` reads
/// on Linux and the one the loop's `timerfd` runs on.
///
/// Inside the loop every instant is an `Int64` count of nanoseconds on this clock (a run's
/// timeout, a timer's deadline, the `timerfd`'s setting): plain integers that compare and
/// copy for free. Instants and durations of the public API are converted here, at the edge,
/// and nowhere else.
package enum LoopClock {
  /// One pair taken at first use that maps `ContinuousClock` instants to readings: an
  /// instant and the `CLOCK_BOOTTIME` reading it stands for.
  ///
  /// The pair must be exact. Conversions go both ways (a deadline in, a due time out), and a
  /// pair that is off by the time between two clock reads shifts every due time the loop
  /// reports by that much, for the life of the process: a call-out's due time could then come
  /// before the signal that made it. An instant of `ContinuousClock` holds the
  /// `CLOCK_BOOTTIME` reading it was taken at as a `Duration`, and no public API hands that
  /// value out, so it is read through `unsafeBitCast` (the only unsafe construct here; its
  /// benefit is exactness, not speed). The value is checked against readings taken just
  /// before and after; should a future runtime store instants differently, the check fails
  /// and the pair falls back to the midpoint of the closest of a few bracketed reads (off by
  /// at most half the bracket, under a microsecond on an idle machine).
  private static let reference: (instant: ContinuousClock.Instant, nanoseconds: Int64) = {
    var best: (instant: ContinuousClock.Instant, nanoseconds: Int64, gap: Int64)?
    for _ in 0..<16 {
      let before = now()
      let instant = ContinuousClock.now
      let after = now()
      // `ContinuousClock.Instant` stores the clock reading as a `Duration` but does not make
      // it public; the bit cast reads it, guarded by the size check, and the reading is used
      // only when it falls between the two `now()` readings around it.
      if MemoryLayout<ContinuousClock.Instant>.size == MemoryLayout<Duration>.size {
        let stored = nanoseconds(of: unsafeBitCast(instant, to: Duration.self))
        if stored.exact, before <= stored.nanoseconds, stored.nanoseconds <= after {
          return (instant, stored.nanoseconds)
        }
      }
      let gap = after - before
      if best == nil || gap < best!.gap { best = (instant, before + gap / 2, gap) }
    }
    return (best!.instant, best!.nanoseconds)
  }()

  /// The current reading.
  package static func now() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_BOOTTIME, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
  }

  /// The reading at `instant`, rounded up to a whole nanosecond (a deadline never comes
  /// early) and at least 1 (0 stands for "unset" where a reading is stored in an atomic).
  package static func nanoseconds(of instant: ContinuousClock.Instant) -> Int64 {
    // Bounded well inside `Int64`, so that adding the reference cannot overflow.
    let limit: Int64 = 1 << 61
    let offset = nanoseconds(of: instant - reference.instant, rounded: .up).nanoseconds
    return max(1, reference.nanoseconds + min(max(offset, -limit), limit))
  }

  /// The instant of a reading.
  package static func instant(ofNanoseconds nanoseconds: Int64) -> ContinuousClock.Instant {
    reference.instant + .nanoseconds(nanoseconds - reference.nanoseconds)
  }

  /// `duration` in whole nanoseconds, rounded by `rule` (`.up`, `.down` or `.towardZero`)
  /// and saturated to the `Int64` range; `exact` tells whether no rounding or saturation
  /// happened. The one conversion from `Duration` to nanoseconds in the package.
  package static func nanoseconds(
    of duration: Duration, rounded rule: FloatingPointRoundingRule = .towardZero
  ) -> (nanoseconds: Int64, exact: Bool) {
    let (quotient, remainder) = dividedByBillion(duration.attoseconds)
    var whole = quotient  // rounded toward zero
    switch rule {
    case .up where remainder > 0: whole += 1
    case .down where remainder < 0: whole -= 1
    default: break
    }
    guard let nanoseconds = Int64(exactly: whole) else {
      return (whole > 0 ? .max : .min, false)
    }
    return (nanoseconds, remainder == 0)
  }

  /// `value / 10^9` and `value % 10^9`, rounded toward zero. Every duration shorter than
  /// about 584 billion years takes one 128-by-64-bit hardware division
  /// (`dividingFullWidth`), where `Int128`'s generic division is a library call several
  /// times slower; a timer's fire date is converted on every schedule.
  private static func dividedByBillion(_ value: Int128) -> (quotient: Int128, remainder: Int128) {
    let billion: UInt64 = 1_000_000_000
    let magnitude = value.magnitude
    let high = UInt64(truncatingIfNeeded: magnitude >> 64)
    guard high < billion else { return value.quotientAndRemainder(dividingBy: 1_000_000_000) }
    let (quotient, remainder) = billion.dividingFullWidth(
      (high: high, low: UInt64(truncatingIfNeeded: magnitude)))
    return value < 0
      ? (-Int128(quotient), -Int128(remainder)) : (Int128(quotient), Int128(remainder))
  }
}
