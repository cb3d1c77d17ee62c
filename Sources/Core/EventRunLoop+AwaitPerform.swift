/// Awaitable perform requests: `try await loop.submit { ... }`, the async form of
/// ``EventRunLoop/performAndWait(inModes:name:deadline:_:)``.
extension EventRunLoop {
  /// Runs `body` on this loop's thread, the next time the loop passes through one of
  /// `modes`, and returns its value or rethrows its error. The awaiting task is suspended,
  /// not blocked: no thread waits, also when the perform queue is full (the request then
  /// waits in the queue's first-come, first-served line; see ``performQueueLimit``).
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
  /// let count = try await worker.submit { cache.count }
  /// ```
  ///
  /// - Throws: what `body` throws; ``RunLoopError/Code/notOwningThread`` on the main loop
  ///   when the main thread has ended (an `async` main: see ``runMain(_:)``);
  ///   `CancellationError` when the awaiting task was cancelled
  ///   before the request started (the request is cancelled and `body` never runs; a
  ///   request already running is awaited to the end and its value returned);
  ///   ``RunLoopError/Code/loopThreadExited`` when the loop's thread exited before the
  ///   request ran.
  public func submit<Value: Sendable>(
    inModes modes: [LoopMode] = EventRunLoop.commonModesOnly,
    name: String = EventRunLoop.defaultPerformName,
    _ body: @escaping @Sendable () throws -> Value
  ) async throws -> Value {
    if let unreachable = mainLoopUnreachable() { throw unreachable }
    let waiter = PerformWaiter<Value>()
    defer { waiter.awaitResumption() }
    return try await withTaskCancellationHandler {
      // Unsafe (unchecked) continuation: `PerformWaiter` resumes it exactly once, under its
      // lock, which is what the checked kind would verify at a cost per await.
      try await withUnsafeThrowingContinuation { continuation in
        // A task cancelled before it got here queues nothing.
        guard waiter.begin(continuation) else { return }
        // The outcome lives only in the request's closure: when the request drops the
        // closure without running it (cancelled, or its loop's thread exited), the outcome's
        // deinit resumes the task, so no ending of a request leaves the task waiting.
        let outcome = PerformOutcome(waiter)
        let request = PerformRequest(name: name, modes: modes, waitable: false) {
          outcome.run(body)
        }
        // Attached before it is queued, so a cancellation from now on reaches it.
        waiter.attach(request)
        guard request.state == .pending else { return }
        // Never blocks: in a full queue the request waits in line, not this thread.
        enqueueWithoutWaiting(request)
      }
    } onCancel: {
      waiter.cancel()
    }
  }
}

/// The awaiting side of an awaitable perform: the suspended task's continuation, the request,
/// and whether the task was cancelled. Resumes the task exactly once.
///
/// Two locks, never held together. `state` keeps the request and the cancellation, and the
/// task's cancellation handler takes it (the runtime runs that handler under a lock of the
/// task's own). `resumption` keeps the continuation and is held while the continuation is
/// resumed, so that the awaiting task, which takes `resumption` once after it resumed
/// (``awaitResumption()``), is ordered after everything `resume` did on the loop's thread.
/// The runtime orders the two already, with atomics that ThreadSanitizer cannot see; the lock
/// makes that order one it sees, so a task that reuses its frame for the next await while
/// the loop's thread is still returning from `resume` is not reported as a data race.
final class PerformWaiter<Value: Sendable>: Sendable {
  private struct State {
    var request: PerformRequest?
    var cancelRequested = false
    /// The task was resumed: the request is done with and must not be kept.
    var finished = false
  }
  private let state = GuardedState(State())
  private let resumption = GuardedState<UnsafeContinuation<Value, any Error>?>(nil)

  /// Stores the continuation; returns `false`, having resumed it with `CancellationError`,
  /// when the task was cancelled already.
  func begin(_ continuation: UnsafeContinuation<Value, any Error>) -> Bool {
    let cancelled = state.withLock { $0.cancelRequested }
    if cancelled {
      continuation.resume(throwing: CancellationError())
      return false
    }
    resumption.withLock { $0 = continuation }
    return true
  }

  /// Remembers the request; cancels it at once when the task was cancelled before it was
  /// queued (the cancellation handler ran first and found no request).
  func attach(_ request: PerformRequest) {
    let cancelNow = state.withLock { state -> Bool in
      guard !state.finished else { return false }
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
    state.withLock { state in
      state.request = nil
      state.finished = true
    }
    // Resumed under the lock: see the type's comment. `resume` only hands the task to its
    // executor; it calls no code of ours, so no lock of ours is taken while this one is held.
    resumption.withLock { continuation in
      continuation.take()?.resume(with: result)
    }
  }

  /// Called by the awaiting task once it resumed: waits out the loop thread's `resume`, if
  /// it has not returned yet, so the task's next steps are ordered after it.
  func awaitResumption() {
    resumption.withLock { _ in }
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
final class PerformOutcome<Value: Sendable>: Sendable {
  private let waiter: PerformWaiter<Value>

  init(_ waiter: PerformWaiter<Value>) {
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
