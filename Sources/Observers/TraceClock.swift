import Glibc

/// Clock readings for traces. Monotonic timestamps are `CLOCK_BOOTTIME` nanoseconds, the
/// clock `ContinuousClock` reads on Linux, so a call-out's `ContinuousClock` instants and an
/// activity's reading are on one time line.
package enum TraceClock {
  // One pair of readings maps ContinuousClock instants to CLOCK_BOOTTIME nanoseconds.
  private static let reference: (instant: ContinuousClock.Instant, nanoseconds: Int64) = {
    let instant = ContinuousClock.now
    return (instant, monotonicNow())
  }()

  /// `CLOCK_BOOTTIME` now, in nanoseconds.
  package static func monotonicNow() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_BOOTTIME, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
  }

  /// The wall clock (`CLOCK_REALTIME`) now, in nanoseconds since the Unix epoch.
  package static func wallNow() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
  }

  /// The monotonic nanoseconds of a `ContinuousClock` instant; an instant beyond `Int64`'s
  /// range (some 292 years away: a call-out's due time can be anything its caller chose)
  /// gives `Int64.min` or `Int64.max`, never an overflow trap on the loop thread.
  package static func nanoseconds(of instant: ContinuousClock.Instant) -> Int64 {
    adding(reference.nanoseconds, nanoseconds(instant - reference.instant))
  }

  /// A duration in whole nanoseconds, clamped to `Int64`'s range.
  package static func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return seconds < 0 ? .min : .max }
    return adding(whole, attoseconds / 1_000_000_000)
  }

  /// `a + b`, clamped to `Int64`'s range.
  package static func adding(_ a: Int64, _ b: Int64) -> Int64 {
    let (sum, overflow) = a.addingReportingOverflow(b)
    guard overflow else { return sum }
    return b < 0 ? .min : .max
  }

  /// `a - b`, clamped to `Int64`'s range: a call-out's lateness (its start minus its due
  /// time) when the two are further apart than `Int64` counts.
  package static func subtracting(_ a: Int64, _ b: Int64) -> Int64 {
    let (difference, overflow) = a.subtractingReportingOverflow(b)
    guard overflow else { return difference }
    return b < 0 ? .max : .min
  }
}
