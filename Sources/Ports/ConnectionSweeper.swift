import RunLoopCore

/// Wakes a ``NamedPortServer``'s loop when one of its connections may have passed its idle
/// or frame deadline, as a deadline source of the server's loop: the loop's own timerfd
/// wakes it, so no descriptor or thread is spent on deadlines.
///
/// It keeps one ``LoopClock`` reading, the earliest deadline the server told it of since the
/// last sweep. That reading may be early (a connection's deadline moves later with traffic); the sweep
/// then finds nothing due and tells the true earliest one. Sweeps are at least
/// ``granularity`` apart, so busy connections cannot make the loop sweep on every pass.
///
/// Not a `LoopTimer` per connection: Ports depends on Core alone (the Timers module is a
/// sibling, not a base), and one instant is all a sweep needs, where timers would cost a
/// heap node and a reschedule for every message a connection receives.
final class ConnectionSweeper: DeadlineSource, @unchecked Sendable {
  // Unchecked: each `var` below says why it needs no lock (set once in init, before the
  // object is shared, or touched on one thread only); the rest is locked or atomic.
  /// How far apart two sweeps are at least, in loop clock nanoseconds.
  let granularity: Int64
  // Whether the server serves `mode` (one of its loop's common modes when the flag says so):
  // a connection is only read in the server's modes, so it must only be timed out in them.
  private let serves: @Sendable (LoopMode, Bool) -> Bool
  // Closes what is due at the instant given; returns the earliest deadline left.
  private let sweep: @Sendable (ContinuousClock.Instant) -> ContinuousClock.Instant?
  // Loop thread only: the loop asks and fires deadline sources on its own thread, and the server
  // notes deadlines from its connections' call-outs, on the same thread. A loop clock reading,
  // as the loop asks for it on every pass: converted when noted, not when asked.
  private var due: Int64?

  init(
    granularity: Duration, serves: @escaping @Sendable (LoopMode, Bool) -> Bool,
    sweep: @escaping @Sendable (ContinuousClock.Instant) -> ContinuousClock.Instant?
  ) {
    self.granularity = LoopClock.nanoseconds(of: granularity, rounded: .up).nanoseconds
    self.serves = serves
    self.sweep = sweep
  }

  /// Notes a connection's new deadline. Loop thread only.
  func note(_ deadline: ContinuousClock.Instant) {
    let deadline = LoopClock.nanoseconds(of: deadline)
    if let due, due <= deadline { return }
    due = deadline
  }

  // Keeps no mode alive on its own: the server's listener does.
  func hasItems(in mode: ActiveMode) -> Bool { false }

  func nextDeadline(in mode: ActiveMode) -> Int64? {
    guard let due, serves(mode.mode, mode.isCommon) else { return nil }
    return due
  }

  func fireDue(in mode: ActiveMode, now: Int64, on loop: EventRunLoop) {
    guard let due, now >= due, serves(mode.mode, mode.isCommon) else { return }
    self.due = sweep(LoopClock.instant(ofNanoseconds: now)).map {
      max(LoopClock.nanoseconds(of: $0), now &+ granularity)
    }
  }
}
