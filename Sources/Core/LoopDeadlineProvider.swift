/// Something that needs the loop to wake at given instants: the extension point through
/// which the Timers module plugs timers into the loop.
///
/// In each pass the loop asks every provider for the instant it must wake by in the running
/// mode (step 7 arms one `timerfd` for the earliest), and after waking tells each provider to
/// fire what is due (step 9). The loop calls providers on its own thread with no lock held.
/// A provider that gains an earlier deadline from another thread calls
/// ``EventRunLoop/wakeUp()`` so that the sleeping loop asks again.
///
/// Mode membership is the provider's business; ``EventRunLoop/isCommonMode(_:)`` tells it
/// whether items it keeps under ``LoopMode/common`` apply to a mode.
///
/// ```swift
/// final class OneShot: LoopDeadlineProvider {
///   let due = ContinuousClock.now + .milliseconds(10)
///   func hasItems(in mode: LoopMode, of loop: EventRunLoop) -> Bool { mode == .default }
///   func nextDeadline(in mode: LoopMode, of loop: EventRunLoop) -> ContinuousClock.Instant? {
///     mode == .default ? due : nil
///   }
///   func fireDue(in mode: LoopMode, of loop: EventRunLoop, now: ContinuousClock.Instant) {}
/// }
/// ```
public protocol LoopDeadlineProvider: AnyObject, Sendable {
  /// Whether the provider has anything scheduled in `mode`. A mode in which no provider has
  /// items and that has no sources is empty, and a run in it returns ``RunResult/finished``.
  func hasItems(in mode: LoopMode, of loop: EventRunLoop) -> Bool

  /// The instant by which the loop must wake to serve this provider in `mode`, or `nil`.
  func nextDeadline(in mode: LoopMode, of loop: EventRunLoop) -> ContinuousClock.Instant?

  /// Fires whatever is due at `now` in `mode`. Call-outs should go through
  /// ``EventRunLoop/withCallout(_:name:dueAt:_:)`` so that instruments see them.
  func fireDue(in mode: LoopMode, of loop: EventRunLoop, now: ContinuousClock.Instant)
}
