import Glibc

/// Clock readings for traces. Monotonic timestamps are `CLOCK_BOOTTIME` nanoseconds, the
/// clock `ContinuousClock` reads on Linux, so a call-out's `ContinuousClock` instants and an
/// activity's reading are on one time line.
enum _TraceClock {
  // One pair of readings maps ContinuousClock instants to CLOCK_BOOTTIME nanoseconds.
  private static let reference: (instant: ContinuousClock.Instant, nanoseconds: Int64) = {
    let instant = ContinuousClock.now
    return (instant, monotonicNow())
  }()

  /// `CLOCK_BOOTTIME` now, in nanoseconds.
  static func monotonicNow() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_BOOTTIME, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
  }

  /// The wall clock (`CLOCK_REALTIME`) now, in nanoseconds since the Unix epoch.
  static func wallNow() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
  }

  /// The monotonic nanoseconds of a `ContinuousClock` instant.
  static func nanoseconds(of instant: ContinuousClock.Instant) -> Int64 {
    reference.nanoseconds + nanoseconds(instant - reference.instant)
  }

  /// A duration in whole nanoseconds.
  static func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
  }
}
