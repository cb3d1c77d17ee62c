import RunLoopCore

/// Timer ticks as an `AsyncSequence`: the role of Combine's
/// `Timer.publish(every:on:in:)` for a task.
extension EventRunLoop {
  /// The instants at which a repeating ``LoopTimer`` on this loop fires, every `interval`
  /// from now, while the loop runs in one of `modes` (`.common` by default, as
  /// `Timer.publish(every: 1, on: .main, in: .common)`).
  ///
  /// The timer is made and added at once (it does not wait for the first `next()`, the way
  /// `autoconnect()` does on the first subscriber). A consumer slower than the ticks misses
  /// some: with the default `.newest(1)` it finds the latest tick waiting, and
  /// `LoopEvents.droppedCount` counts the others. Ending the consuming task
  /// invalidates the timer. On a loop whose thread has exited, the sequence is empty.
  ///
  /// ```swift
  /// for await tick in worker.ticks(every: .seconds(1), tolerance: .milliseconds(100)) {
  ///   print("tick", tick)
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - interval: the time between ticks; at least a nanosecond.
  ///   - tolerance: how late each tick may come (lets the loop batch wake-ups).
  ///   - modes: the modes whose runs fire the timer.
  ///   - buffering: what the buffer keeps when the consumer falls behind.
  ///   - name: the timer's name in traces.
  public func ticks(
    every interval: Duration, tolerance: Duration = .zero, inModes modes: [LoopMode] = [.common],
    buffering: LoopEvents<ContinuousClock.Instant>.Buffering = .newest(1),
    name: String = "ticks"
  ) -> LoopEvents<ContinuousClock.Instant> {
    let timerBox = GuardedState<LoopTimer?>(nil)
    let ticks = LoopEvents<ContinuousClock.Instant>(buffering: buffering) {
      timerBox.withLock { $0.take() }?.invalidate()
    }
    let feed = ticks.feed
    let every = max(interval, .nanoseconds(1))
    // A positive interval never makes the initializer throw.
    let timer = try! LoopTimer(
      fireAt: .now + every, every: every, tolerance: tolerance, name: name
    ) { _ in
      feed.yield(.now)
    }
    timerBox.withLock { $0 = timer }
    do {
      try add(timer, modes: modes)
    } catch {
      timer.invalidate()
      feed.finish()
    }
    if ticks.isFinished { timer.invalidate() }
    return ticks
  }
}
