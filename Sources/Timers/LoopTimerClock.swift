import RunLoopCore

/// A loop's timers as a Swift `Clock`: `sleep(until:tolerance:)` is a one-shot
/// ``LoopTimer`` on the loop, so `Task.sleep(for:tolerance:clock:)` and clock-based
/// operators (swift-async-algorithms' `debounce`, `throttle`, `AsyncTimerSequence`) run on
/// the loop's timers: they fire while the loop runs in one of ``modes``, with the timer's
/// tolerance, and are traced like any timer.
///
/// Instants are `ContinuousClock`'s, the loop's own time base. A sleep's tolerance becomes
/// the timer's tolerance (`nil`: none); cancelling the sleeping task invalidates the timer at
/// once; a loop whose thread exits ends the sleep with `loopThreadExited`.
///
/// ```swift
/// let clock = worker.clock
/// try await Task.sleep(for: .milliseconds(200), tolerance: .milliseconds(20), clock: clock)
/// ```
public struct LoopTimerClock: Clock {
  /// A point in time: the loop's time base, `ContinuousClock`.
  public typealias Instant = ContinuousClock.Instant

  /// The loop whose timers measure the sleeps.
  ///
  /// ```swift
  /// assert(worker.clock.loop === worker)
  /// ```
  public let loop: EventRunLoop
  /// The modes whose runs fire the sleeps' timers.
  ///
  /// ```swift
  /// let tracking = LoopTimerClock(loop: .main, modes: ["tracking"])
  /// ```
  public let modes: [LoopMode]

  /// A clock on `loop`'s timers in `modes` (the common modes by default).
  ///
  /// ```swift
  /// let clock = LoopTimerClock(loop: worker, modes: [.default])
  /// ```
  public init(loop: EventRunLoop, modes: [LoopMode] = [.common]) {
    self.loop = loop
    self.modes = modes
  }

  /// Now, on the loop's time base.
  ///
  /// ```swift
  /// let start = worker.clock.now
  /// ```
  public var now: Instant { .now }

  /// The smallest step a timer can take: a nanosecond (the `timerfd` resolution).
  ///
  /// ```swift
  /// worker.clock.minimumResolution  // 1 ns
  /// ```
  public var minimumResolution: Duration { .nanoseconds(1) }

  /// Suspends the task until `deadline` (up to `tolerance` later), measured by a one-shot
  /// timer on the loop.
  ///
  /// ```swift
  /// try await worker.clock.sleep(until: .now + .seconds(1), tolerance: .milliseconds(100))
  /// ```
  ///
  /// - Throws: `CancellationError` when the task is cancelled first (the timer is
  ///   invalidated); a `RunLoopError` with code `loopThreadExited` when the loop's thread
  ///   exits first.
  public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    try await loop.sleep(until: deadline, tolerance: tolerance ?? .zero, inModes: modes)
  }
}

extension EventRunLoop {
  /// This loop's timers as a `Clock` in its common modes (see ``LoopTimerClock``).
  ///
  /// ```swift
  /// try await Task.sleep(for: .milliseconds(50), clock: worker.clock)
  /// ```
  public var clock: LoopTimerClock { LoopTimerClock(loop: self) }
}
