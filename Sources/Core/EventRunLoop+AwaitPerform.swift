/// Awaitable perform requests: `try await loop.perform { ... }`, the async form of
/// ``EventRunLoop/performAndWait(inModes:name:deadline:_:)``.
extension EventRunLoop {
  /// Runs `body` on this loop's thread, the next time the loop passes through one of
  /// `modes`, and returns its value or rethrows its error. The awaiting task is suspended,
  /// not blocked: no thread waits.
  ///
  /// The closure is an ordinary perform request (see ``perform(inModes:name:_:)->PerformRequest``): it runs
  /// in FIFO order with the loop's other requests, in a batch of the loop's pass, and is
  /// traced as a call-out of kind ``CalloutKind/block``.
  ///
  /// From the loop's own thread (in a task whose executor is this loop), the request is
  /// queued like any other and the task suspends; the loop runs it in its next batch of
  /// requests, after the current call-out returned. It never deadlocks and never runs
  /// `body` inline: it keeps its modes and its place in the queue. (The blocking
  /// ``performAndWait(inModes:name:deadline:_:)`` runs inline on its own thread instead,
  /// because blocking there would deadlock.)
  ///
  /// ```swift
  /// let count = try await worker.perform { cache.count }
  /// ```
  ///
  /// - Throws: what `body` throws; `CancellationError` when the awaiting task was cancelled
  ///   before the request started (the request is cancelled and `body` never runs; a
  ///   request already running is awaited to the end and its value returned);
  ///   ``RunLoopError/Code/loopThreadExited`` when the loop's thread exited before the
  ///   request ran.
  public func perform<Value: Sendable>(
    inModes modes: [LoopMode] = EventRunLoop.commonModesOnly,
    name: String = EventRunLoop.defaultPerformName,
    _ body: @escaping @Sendable () throws -> Value
  ) async throws -> Value {
    let waiter = _PerformWaiter<Value>()
    return try await withTaskCancellationHandler {
      // Unsafe (unchecked) continuation: `_PerformWaiter` resumes it exactly once, under its
      // lock, which is what the checked kind would verify at a cost per await.
      try await withUnsafeThrowingContinuation { continuation in
        // A task cancelled before it got here queues nothing.
        guard waiter.begin(continuation) else { return }
        // The outcome lives only in the request's closure: when the request drops the
        // closure without running it (cancelled, or its loop's thread exited), the outcome's
        // deinit resumes the task, so no ending of a request leaves the task waiting.
        let outcome = _PerformOutcome(waiter)
        let request = perform(inModes: modes, name: name) { outcome.run(body) }
        waiter.attach(request)
      }
    } onCancel: {
      waiter.cancel()
    }
  }
}

/// The awaiting side of an awaitable perform: the suspended task's continuation, the request,
/// and whether the task was cancelled. Resumes the task exactly once.
final class _PerformWaiter<Value: Sendable>: Sendable {
  private struct State {
    var continuation: UnsafeContinuation<Value, any Error>?
    var request: PerformRequest?
    var cancelRequested = false
  }
  private let state = GuardedState(State())

  /// Stores the continuation; returns `false`, having resumed it with `CancellationError`,
  /// when the task was cancelled already.
  func begin(_ continuation: UnsafeContinuation<Value, any Error>) -> Bool {
    let cancelled = state.withLock { state -> Bool in
      guard !state.cancelRequested else { return true }
      state.continuation = continuation
      return false
    }
    if cancelled { continuation.resume(throwing: CancellationError()) }
    return !cancelled
  }

  /// Remembers the request; cancels it at once when the task was cancelled before it was
  /// queued (the cancellation handler ran first and found no request).
  func attach(_ request: PerformRequest) {
    let cancelNow = state.withLock { state -> Bool in
      guard state.continuation != nil else { return false }
      state.request = request
      return state.cancelRequested
    }
    if cancelNow { request.cancel() }
  }

  /// The task was cancelled: cancel the request if it has not started.
  func cancel() {
    let request = state.withLock { state -> PerformRequest? in
      state.cancelRequested = true
      return state.request
    }
    request?.cancel()
  }

  /// Resumes the task with `result`, unless it was resumed already.
  func finish(_ result: Result<Value, any Error>) {
    let continuation = state.withLock { state in
      state.request = nil
      return state.continuation.take()
    }
    continuation?.resume(with: result)
  }

  /// The request let go of its closure without running it.
  func dropped() {
    let cancelled = state.withLock { $0.cancelRequested }
    if cancelled {
      finish(.failure(CancellationError()))
    } else {
      finish(.failure(RunLoopError.loopThreadExited("the loop's thread exited before it ran")))
    }
  }
}

/// What an awaitable perform's closure holds: runs the body and hands its result to the
/// waiter; when released without having run, tells the waiter that the request was dropped.
final class _PerformOutcome<Value: Sendable>: Sendable {
  private let waiter: _PerformWaiter<Value>

  init(_ waiter: _PerformWaiter<Value>) {
    self.waiter = waiter
  }

  deinit {
    // After `run`, `finish` already took the continuation, and this does nothing.
    waiter.dropped()
  }

  func run(_ body: () throws -> Value) {
    waiter.finish(Result { try body() })
  }
}
