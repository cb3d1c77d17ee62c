/// The states of a loop's wake-up protocol (`EventRunLoop.wakeState`).
///
/// - `awake`: no wake-up is outstanding; the next `wakeUp()` writes to the eventfd
///   (`written`), unless the loop polls by then.
/// - `written`: a `wakeUp()` wrote; the loop has not taken the event from `epoll` yet, and
///   further wake-ups skip their write. Taking the event sets `awake`.
/// - `polling`: the loop is polling before it sleeps; a `wakeUp()` sets `marked` and writes
///   nothing.
/// - `marked`: a wake-up came while the loop polled; the poll ends and sets `awake`.
enum WakeState {
  static let awake: UInt8 = 0
  static let written: UInt8 = 1
  static let polling: UInt8 = 2
  static let marked: UInt8 = 3
}
