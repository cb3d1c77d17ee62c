import Dispatch

/// Perform requests: closures run on a loop's thread, the guide's
/// `performSelector:onThread:withObject:waitUntilDone:modes:`.
extension EventRunLoop {
  // The default modes of a perform request, made once: an array literal as a default
  // argument is a new array (an allocation) on every call.
  @usableFromInline static let commonModesOnly: [LoopMode] = [.common]
  /// The default name of a perform request.
  @usableFromInline static let defaultPerformName = "perform"

  /// Queues `body` to run on this loop's thread the next time the loop passes through one of
  /// `modes`, and wakes the loop (CoreFoundation's `CFRunLoopPerformBlock` does not wake it;
  /// this does). Requests run in FIFO order; all requests queued before a pass run in that
  /// pass. Perform requests never count as handled sources. Safe from any thread.
  ///
  /// A request for a loop whose thread has exited never runs: its state is
  /// ``PerformRequest/State/abandoned``.
  ///
  /// ```swift
  /// let request = worker.perform(inModes: [.default]) { print("hello from the worker") }
  /// ```
  @discardableResult
  public func perform(
    inModes modes: [LoopMode] = EventRunLoop.commonModesOnly,
    name: String = EventRunLoop.defaultPerformName,
    _ body: @escaping @Sendable () -> Void
  ) -> PerformRequest {
    let request = PerformRequest(name: name, modes: modes, waitable: false, body: body)
    enqueue(request)
    return request
  }

  /// ``perform(inModes:name:_:)->PerformRequest`` with its defaults: `body` runs in the loop's common modes,
  /// named "perform" in traces.
  ///
  /// ```swift
  /// worker.perform { print("hello from the worker") }
  /// ```
  @discardableResult
  public func perform(_ body: @escaping @Sendable () -> Void) -> PerformRequest {
    let request = PerformRequest(name: Self.defaultPerformName, body: body)
    enqueue(request)
    return request
  }

  /// Runs `body` on this loop's thread and waits until it has run. Called on the loop's own
  /// thread, it runs `body` at once instead of deadlocking.
  ///
  /// ```swift
  /// try worker.performAndWait { configure() }
  /// ```
  ///
  /// - Parameters:
  ///   - modes: the modes in which it may run (the common modes by default).
  ///   - name: its name in traces.
  ///   - deadline: give up waiting then; the request is cancelled if it has not started (a
  ///     request already running is waited for to the end).
  ///   - body: the work.
  /// - Throws: ``RunLoopError/Code/timedOut`` at the deadline,
  ///   ``RunLoopError/Code/cancelled`` when someone cancelled it,
  ///   ``RunLoopError/Code/loopThreadExited`` when the loop's thread exited first.
  public func performAndWait(
    inModes modes: [LoopMode] = EventRunLoop.commonModesOnly,
    name: String = EventRunLoop.defaultPerformName,
    deadline: ContinuousClock.Instant? = nil, _ body: @escaping @Sendable () -> Void
  ) throws(RunLoopError) {
    if isCurrent {
      withCallout(.block, name: name, dueAt: nil, body)
      return
    }
    let request = PerformRequest(name: name, modes: modes, waitable: true, body: body)
    guard enqueue(request, waitingUntil: deadline) else {
      throw .timedOut("'\(name)' found no room in the perform queue of \(self) before its deadline")
    }
    var outcome = request.wait(until: deadline)
    if outcome == nil {
      if request.cancel() {
        throw .timedOut("'\(name)' did not start on \(self) before its deadline")
      }
      outcome = request.wait(until: nil)
    }
    switch outcome {
    case .finished: return
    case .cancelled: throw .cancelled("'\(name)' was cancelled before it ran")
    case .abandoned: throw .loopThreadExited("the thread of \(self) exited before '\(name)' ran")
    default: return
    }
  }

  /// Queues `body` on the main thread's loop; see ``perform(inModes:name:_:)->PerformRequest``.
  ///
  /// ```swift
  /// EventRunLoop.performOnMain { updateStatus() }
  /// ```
  @discardableResult
  public static func performOnMain(
    inModes modes: [LoopMode] = EventRunLoop.commonModesOnly,
    name: String = EventRunLoop.defaultPerformName,
    _ body: @escaping @Sendable () -> Void
  ) -> PerformRequest {
    main.perform(inModes: modes, name: name, body)
  }

  /// Queues `request` and wakes the loop; abandons it when the loop's thread has exited.
  /// Every perform request comes through here. When the queue holds
  /// ``performQueueLimit`` requests (or others wait already), the request joins the line
  /// (see `PerformQueueBound`) and a producer on another thread blocks until it is in or
  /// until `deadline` (`nil`: for as long as it takes); returns `false` when the deadline
  /// came first, and the request was not queued.
  @discardableResult
  func enqueue(_ request: PerformRequest, waitingUntil deadline: ContinuousClock.Instant? = nil)
    -> Bool
  {
    switch admitOrLine(request, blocking: deadline.map { .until($0) } ?? .forever) {
    case .queued:
      // No fence before the wake-up, unlike `wakeUp()`: the queue's count was published
      // with a sequentially consistent store, which already orders it before the wake
      // state's read.
      waker.wake()
      return true
    case .abandoned:
      countAbandoned(request.abandon() ? 1 : 0)
      return true
    case .lined:
      return true
    case .full:
      return false
    case .blocked(let room):
      return waitInLine(request, on: room, until: deadline)
    }
  }

  /// Queues the request of an awaitable perform: when the queue is full, the request waits
  /// in the line and the thread goes on (the awaiting task stays suspended until the
  /// request ran or was dropped).
  func enqueueWithoutWaiting(_ request: PerformRequest) {
    switch admitOrLine(request, blocking: nil) {
    case .queued: waker.wake()
    case .abandoned: countAbandoned(request.abandon() ? 1 : 0)
    case .lined, .full, .blocked: break
    }
  }

  /// Adds to ``abandonedPerformRequests``.
  func countAbandoned(_ count: Int) {
    guard count > 0 else { return }
    state.withLock { $0.performBound.abandoned += count }
  }

  /// How a producer that finds the queue full waits.
  private enum Blocking {
    case forever
    case until(ContinuousClock.Instant)
  }

  /// Under the lock: queues `request`, or puts it in the line (with a semaphore for a
  /// blocking producer), or refuses it when its deadline has passed.
  private func admitOrLine(_ request: PerformRequest, blocking: Blocking?) -> EnqueueOutcome {
    let ownThread = isCurrent
    // One relaxed load when nothing traces call-outs (the usual case).
    request.stamp = CapturedCause.ifTracing()
    return state.withLock { state -> EnqueueOutcome in
      guard !state.threadExited else { return .abandoned }
      if ownThread
        || (state.performBound.line.isEmpty
          && state.performQueue.count < state.performBound.limit)
      {
        state.performQueue.append(request)
        state.performBound.highWater = max(
          state.performBound.highWater, state.performQueue.count)
        return .queued
      }
      switch blocking {
      case nil:
        state.performBound.line.append(request)
        return .lined
      case .until(let deadline) where ContinuousClock.now >= deadline:
        return .full
      case .forever, .until:
        let room = DispatchSemaphore(value: 0)
        state.performBound.blocked[ObjectIdentifier(request)] = room
        state.performBound.line.append(request)
        return .blocked(room)
      }
    }
  }

  /// Blocks the producing thread until its request left the line (admitted, or abandoned
  /// with its loop); at `deadline`, takes it out of the line and returns `false`, unless it
  /// was admitted meanwhile.
  private func waitInLine(
    _ request: PerformRequest, on room: DispatchSemaphore,
    until deadline: ContinuousClock.Instant?
  ) -> Bool {
    guard let deadline else {
      room.wait()
      return true
    }
    let nanoseconds = max(0, LoopClock.nanoseconds(of: deadline - .now).nanoseconds)
    if room.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success { return true }
    return !state.withLock { state in
      guard state.performBound.blocked.removeValue(forKey: ObjectIdentifier(request)) != nil
      else { return false }
      return state.performBound.line.remove(request)
    }
  }

  private enum EnqueueOutcome {
    case queued
    case abandoned
    case full
    case lined
    case blocked(DispatchSemaphore)
  }

  /// Moves requests from the line into the queue as room allows (under the lock), then,
  /// after it, wakes the threads whose requests went in, releases the cancelled requests it
  /// let go of, and wakes the loop when something went in.
  func admitWaitingRequests() {
    var dropped = RequestList()
    let (admitted, moved) = state.withLock { state -> ([DispatchSemaphore], Bool) in
      guard !state.performBound.line.isEmpty else { return ([], false) }
      let before = state.performQueue.count
      let admitted = state.admitWaitingRequests(dropped: &dropped)
      return (admitted, state.performQueue.count > before)
    }
    for thread in admitted { thread.signal() }
    dropped.removeAll()
    if moved { waker.wake() }
  }

  /// Runs every perform request for `active` queued before this call, in FIFO order (the
  /// blocks of "blocks and jobs", steps 3, 4 and 9). Takes the lock only when something is
  /// queued.
  func runPerformRequests(_ active: ActiveMode) {
    guard published.performCount.load(ordering: .sequentiallyConsistent) > 0 else { return }
    runQueuedRequests(active)
  }

  /// Out of line, like the other slow paths of a pass (see Docs/Performance.md, "What the
  /// annotations buy"): inlined, it makes the check above, made three times a pass, set up
  /// a batch and save registers it needs only when something is queued.
  @inline(never)
  private func runQueuedRequests(_ active: ActiveMode) {
    var batch = takePerformBatch(active)
    while let request = batch.popFirst() {
      request.runIfPending(on: self)
    }
  }

  /// Takes the queued requests that may run in `active` out of the queue, in order, and
  /// drops the cancelled requests of other modes.
  private func takePerformBatch(_ active: ActiveMode) -> RequestList {
    var batch = RequestList()
    var dropped = RequestList()
    // Requests waiting for room come in once this batch is out of the queue (a second lock
    // only when some wait).
    var lineWaiting = false
    defer { if lineWaiting { admitWaitingRequests() } }
    state.withLock { state in
      defer { lineWaiting = !state.performBound.line.isEmpty }
      if state.performQueue.allSatisfy({ $0.matches(active) }) {
        swap(&batch, &state.performQueue)
        return
      }
      var kept = RequestList()
      while let request = state.performQueue.popFirst() {
        if request.matches(active) {
          batch.append(request)
        } else if request.state == .pending {
          kept.append(request)
        } else {
          // A cancelled request of another mode is dropped here: kept until a run of its
          // modes, it would stay for good on a loop that never runs them.
          dropped.append(request)
        }
      }
      state.performQueue = kept
    }
    dropped.removeAll()
    return batch
  }

  /// Whether a pending request waits for `active`.
  func hasPerformRequests(for active: ActiveMode) -> Bool {
    guard published.performCount.load(ordering: .sequentiallyConsistent) > 0 else { return false }
    return state.withLock { state in
      state.performQueue.contains {
        $0.state == .pending && $0.matches(active)
      }
    }
  }
}
