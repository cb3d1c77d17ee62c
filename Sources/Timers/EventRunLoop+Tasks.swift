import RunLoopCore

// Timers for tasks: ticks as an `AsyncSequence`, and a sleep measured on a loop's timers.

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
  /// invalidates the timer. When the loop's thread exits, or has exited, the sequence ends
  /// and its `failure` is `loopThreadExited`.
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
    }
    ticks.endsWithThread(of: self)
    if ticks.isFinished { timer.invalidate() }
    return ticks
  }
}

/// Sleeping a task on a loop's timers.
extension EventRunLoop {
  /// Suspends the calling task for `duration`, measured by a one-shot ``LoopTimer`` on this
  /// loop: the task resumes when the timer fires, which needs the loop to run in one of
  /// `modes`, and may be up to `tolerance` late (the loop uses the window to serve several
  /// timers with one wake-up, as for any tolerant timer). No thread is blocked.
  ///
  /// ```swift
  /// try await worker.sleep(for: .milliseconds(500), tolerance: .milliseconds(50))
  /// ```
  ///
  /// - Throws: `CancellationError` when the task is cancelled first (the timer is
  ///   invalidated at once); a `RunLoopError` with code `loopThreadExited` when the
  ///   loop's thread has exited.
  public func sleep(
    for duration: Duration, tolerance: Duration = .zero, inModes modes: [LoopMode] = [.common]
  ) async throws {
    try await sleep(until: .now + duration, tolerance: tolerance, inModes: modes)
  }

  /// Suspends the calling task until `deadline`, measured by a one-shot ``LoopTimer`` on
  /// this loop (see ``sleep(for:tolerance:inModes:)``); ``LoopTimerClock`` sleeps with it.
  ///
  /// ```swift
  /// try await worker.sleep(until: .now + .seconds(1), tolerance: .milliseconds(100))
  /// ```
  ///
  /// - Throws: what ``sleep(for:tolerance:inModes:)`` throws.
  public func sleep(
    until deadline: ContinuousClock.Instant, tolerance: Duration = .zero,
    inModes modes: [LoopMode] = [.common]
  ) async throws {
    let sleeper = TimerSleeper()
    try await withTaskCancellationHandler {
      try await withUnsafeThrowingContinuation {
        (continuation: UnsafeContinuation<Void, any Error>) in
        sleeper.begin(continuation)
        // A one-shot timer never throws at creation.
        let timer = try! LoopTimer(fireAt: deadline, tolerance: tolerance, name: "sleep") {
          _ in sleeper.finish(nil)
        }
        guard sleeper.attach(timer) else { return }
        // The thread's exit drops the timer without firing it: the sleep ends then instead.
        guard sleeper.endsWithThread(of: self) else { return }
        do {
          try add(timer, modes: modes)
        } catch {
          timer.invalidate()
          sleeper.finish(error)
        }
      }
    } onCancel: {
      sleeper.cancel()
    }
  }
}

/// The suspended task of a `sleep`, its timer, and whether it was cancelled; resumes the
/// task exactly once. The timer's closure holds the sleeper and the sleeper the timer until
/// the sleep ends (fired, cancelled, or its loop's thread exited): ending it lets go of
/// both.
final class TimerSleeper: Sendable {
  private struct State {
    var continuation: UnsafeContinuation<Void, any Error>?
    var timer: LoopTimer?
    var cancelled = false
    // The loop and the token of its thread-exit handler, while the sleep lasts.
    var exitHandler: (loop: EventRunLoop, token: UInt64)?
  }
  private let state = GuardedState(State())

  func begin(_ continuation: UnsafeContinuation<Void, any Error>) {
    state.withLock { $0.continuation = continuation }
  }

  /// Remembers the timer; returns `false` (and resumes the task) when it was cancelled
  /// before the timer existed.
  func attach(_ timer: LoopTimer) -> Bool {
    let cancelled = state.withLock { state -> Bool in
      state.timer = timer
      return state.cancelled
    }
    if cancelled {
      timer.invalidate()
      finish(CancellationError())
    }
    return !cancelled
  }

  /// Ends the sleep with `loopThreadExited` when `loop`'s thread exits; returns `false`
  /// (and ends it) when the thread has exited already.
  func endsWithThread(of loop: EventRunLoop) -> Bool {
    let exited: @Sendable () -> Void = { [self] in
      let timer = state.withLock { $0.timer }
      timer?.invalidate()
      finish(RunLoopError.loopThreadExited("the thread of \(loop) exited during the sleep"))
    }
    guard let token = loop.whenThreadExits(exited) else {
      exited()
      return false
    }
    let over = state.withLock { state -> Bool in
      guard state.continuation != nil else { return true }
      state.exitHandler = (loop, token)
      return false
    }
    if over { loop.cancelThreadExitHandler(token) }
    return !over
  }

  func cancel() {
    let timer = state.withLock { state -> LoopTimer? in
      state.cancelled = true
      return state.timer
    }
    guard let timer else { return }
    timer.invalidate()
    finish(CancellationError())
  }

  func finish(_ error: (any Error)?) {
    let (continuation, exitHandler) = state.withLock { state in
      state.timer = nil
      return (state.continuation.take(), state.exitHandler.take())
    }
    if let exitHandler { exitHandler.loop.cancelThreadExitHandler(exitHandler.token) }
    if let error { continuation?.resume(throwing: error) } else { continuation?.resume() }
  }
}
