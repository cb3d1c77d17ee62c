import RunLoopCore

/// A closure waiting to run on a run loop after a delay: the handle
/// ``RunLoopCore/EventRunLoop/perform(after:inModes:key:name:_:)`` returns (the guide's
/// `performSelector:withObject:afterDelay:inModes:`).
///
/// ```swift
/// let save = EventRunLoop.current.perform(after: .seconds(2)) { autosave() }
/// // the user saved by hand meanwhile:
/// save.cancel()
/// ```
public final class DelayedPerform: Sendable {
  /// The key given when the request was made, for
  /// ``RunLoopCore/EventRunLoop/cancelDelayedPerforms(key:)``.
  ///
  /// ```swift
  /// if request.key == "search" { request.cancel() }
  /// ```
  public let key: String?
  let timer: LoopTimer

  init(key: String?, timer: LoopTimer) {
    self.key = key
    self.timer = timer
  }

  /// The request's name in traces.
  ///
  /// ```swift
  /// print(request.name)  // "autosave"
  /// ```
  public var name: String { timer.name }

  /// Whether the closure has neither run nor been cancelled.
  ///
  /// ```swift
  /// if request.isPending { request.cancel() }
  /// ```
  public var isPending: Bool { timer.isValid }

  /// Cancels the request if the closure has not started; safe from any thread, and calling
  /// it again does nothing (Foundation's `cancelPreviousPerformRequests`, for one request).
  ///
  /// ```swift
  /// request.cancel()
  /// ```
  public func cancel() {
    timer.invalidate()
    // Forget it under its key now, not at the next cancelDelayedPerforms(key:).
    if let key { timer.scheduler?.forget(timer, key: key) }
  }
}
