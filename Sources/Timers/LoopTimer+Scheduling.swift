import RunLoopCore

/// Creating timers from seconds, and creating and scheduling in one step (Foundation's
/// `scheduledTimer(withTimeInterval:repeats:block:)`).
extension LoopTimer {
  /// The longest delay or interval, in seconds, that a seconds-based API takes as a real
  /// time (about 136 years); longer positive values mean "never" for a delay.
  ///
  /// ```swift
  /// let parked = try LoopTimer(seconds: .infinity) { _ in }  // fires only once rescheduled
  /// ```
  public static let maximumSeconds: Double = 4_294_967_296

  /// Creates a timer from a delay in seconds, the way Foundation's `Timer(timeInterval:
  /// repeats:block:)` does: it first fires `seconds` from now and, when `repeats`, every
  /// `seconds` after that.
  ///
  /// Bad input, all documented and tested:
  /// - NaN (delay or tolerance): throws ``/RunLoopCore/RunLoopError/Code/invalidArgument``.
  /// - A one-shot with a zero, negative or `-infinity` delay fires as soon as its loop runs
  ///   in one of its modes; with `+infinity` (or more than ``maximumSeconds``) it never fires
  ///   unless its ``fireDate`` is set later.
  /// - A repeating timer needs a finite interval greater than zero and at most
  ///   ``maximumSeconds``; anything else throws ``/RunLoopCore/RunLoopError/Code/invalidArgument``.
  /// - A negative tolerance counts as zero; an infinite one throws.
  ///
  /// ```swift
  /// let blink = try LoopTimer(seconds: 0.5, repeats: true, tolerance: 0.05) { _ in toggle() }
  /// ```
  public convenience init(
    seconds: Double, repeats: Bool = false, tolerance: Double = 0, name: String = "timer",
    _ handler: @escaping @Sendable (LoopTimer) -> Void
  ) throws(RunLoopError) {
    guard !seconds.isNaN else { throw .invalidArgument("a timer's seconds cannot be NaN") }
    guard !tolerance.isNaN, tolerance.isFinite else {
      throw .invalidArgument("a timer's tolerance must be a finite number, not \(tolerance)")
    }
    let now = ContinuousClock.now
    var interval: Duration?
    if repeats {
      guard seconds > 0, seconds <= Self.maximumSeconds else {
        throw .invalidArgument(
          "a repeating timer needs an interval in (0, \(Self.maximumSeconds)] seconds, not \(seconds)"
        )
      }
      interval = .seconds(seconds)
    }
    let fireAt: ContinuousClock.Instant
    if seconds <= 0 {
      fireAt = now
    } else if seconds > Self.maximumSeconds {
      fireAt = now + Self.never
    } else {
      fireAt = now + .seconds(seconds)
    }
    let toleranceDuration: Duration = .seconds(min(max(tolerance, 0), Self.maximumSeconds))
    try self.init(
      fireAt: fireAt, every: interval, tolerance: toleranceDuration, name: name, handler)
  }

  /// How far ahead "never" is: far beyond any real deadline (about 34,800 years).
  static let never: Duration = .seconds(Int64(1) << 40)

  /// Creates a timer that fires `delay` from now (then every `interval`, when given) and
  /// adds it to the calling thread's run loop in ``/RunLoopCore/LoopMode/default`` (the
  /// guide's `scheduledTimerWithTimeInterval:` methods).
  ///
  /// ```swift
  /// let poll = try LoopTimer.scheduled(after: .milliseconds(200), every: .milliseconds(200)) { _
  /// in
  ///   pollDevice()
  /// }
  /// ```
  ///
  /// A task's thread runs no loop unless the task runs on one (an actor or a task executor
  /// on a loop): a timer added there would never fire. So from a task whose thread's loop is
  /// not running this throws instead; add the timer to a loop that runs
  /// (``RunLoopCore/EventRunLoop/add(_:mode:)``), or await `loop.sleep(for:)` or
  /// `loop.ticks(every:)`.
  ///
  /// - Throws: what ``init(fireAt:every:tolerance:name:_:)`` and
  ///   ``RunLoopCore/EventRunLoop/add(_:mode:)`` throw;
  ///   ``/RunLoopCore/RunLoopError/Code/invalidState`` when called from a task on a thread
  ///   whose loop is not running.
  @discardableResult
  public static func scheduled(
    after delay: Duration, every interval: Duration? = nil, tolerance: Duration = .zero,
    name: String = "timer", _ handler: @escaping @Sendable (LoopTimer) -> Void
  ) throws(RunLoopError) -> LoopTimer {
    let loop = EventRunLoop.current
    guard loop.isRunning || !withUnsafeCurrentTask(body: { $0 != nil }) else {
      throw .invalidState(
        "LoopTimer.scheduled was called from a task on a thread whose run loop is not running,"
          + " so the timer would never fire; add it to a running loop with add(_:mode:), or"
          + " await the loop's sleep(for:) or ticks(every:)")
    }
    let timer = try LoopTimer(
      fireAt: .now + delay, every: interval, tolerance: tolerance, name: name, handler)
    try loop.add(timer, mode: .default)
    return timer
  }
}
