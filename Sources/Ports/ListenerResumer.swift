import RunLoopCore
import Synchronization

/// Turns a paused listener's read interest back on at a deadline, as a one-shot deadline
/// source of the listener's loop. It needs no descriptor of its own (the loop's timerfd
/// wakes it), which matters because it is used exactly when none can be had; a Dispatch
/// timer would not do either: libdispatch stops the process when it cannot get the
/// descriptor its timer machinery needs on first use.
///
/// Not a `LoopTimer`: Ports depends on Core alone, and the resume must happen in whatever
/// mode the loop runs, where a timer fires only in the modes it was added to.
final class ListenerResumer: DeadlineSource, Sendable {
  /// A `LoopClock` reading.
  private let due: Int64
  private let listener: DescriptorSource
  private let fired = Atomic<Bool>(false)

  init(_ listener: DescriptorSource, at due: ContinuousClock.Instant) {
    self.listener = listener
    self.due = LoopClock.nanoseconds(of: due)
  }

  // Keeps no mode alive on its own: the listener's watch already does.
  func hasItems(in mode: ActiveMode) -> Bool { false }

  // Any mode: turning interest back on is right whichever mode the loop runs.
  func nextDeadline(in mode: ActiveMode) -> Int64? {
    fired.load(ordering: .acquiring) ? nil : due
  }

  func fireDue(in mode: ActiveMode, now: Int64, on loop: EventRunLoop) {
    guard now >= due, !fired.exchange(true, ordering: .acquiringAndReleasing) else { return }
    loop.removeDeadlineSource(self)
    guard listener.isValid else { return }
    try? listener._setWantsReadable(true)
  }
}
