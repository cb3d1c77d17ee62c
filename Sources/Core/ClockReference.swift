import CRunLoopLinux
import Glibc
import Synchronization

/// Converts between `ContinuousClock` instants and the kernel clock a `timerfd` runs on.
///
/// On Linux `ContinuousClock` reads `CLOCK_BOOTTIME` (it keeps counting through suspend),
/// so the loop's `timerfd` uses the same clock. One pair of readings taken at start-up maps
/// instants to absolute `timespec` values.
enum ClockReference {
  private static let reference: (instant: ContinuousClock.Instant, nanoseconds: Int64) = {
    var spec = timespec()
    let instant = ContinuousClock.now
    clock_gettime(CLOCK_BOOTTIME, &spec)
    return (instant, Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
  }()

  /// The clock's nanosecond reading for `instant`, clamped to at least 1 (0 means "unset").
  static func nanoseconds(of instant: ContinuousClock.Instant) -> Int64 {
    let offset = instant - reference.instant
    let (seconds, attoseconds) = offset.components
    let limit: Int64 = 1 << 61
    let offsetNanoseconds: Int64
    if seconds > limit / 1_000_000_000 {
      offsetNanoseconds = limit
    } else if seconds < -(limit / 1_000_000_000) {
      offsetNanoseconds = -limit
    } else {
      offsetNanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
    return max(1, reference.nanoseconds &+ offsetNanoseconds)
  }

  /// The instant for a nanosecond reading made by ``nanoseconds(of:)``.
  /// The current time on CLOCK_BOOTTIME, the clock `ContinuousClock` reads on Linux, in
  /// nanoseconds.
  static func nowNanoseconds() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_BOOTTIME, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
  }

  static func instant(nanoseconds: Int64) -> ContinuousClock.Instant {
    reference.instant + .nanoseconds(nanoseconds - reference.nanoseconds)
  }
}
