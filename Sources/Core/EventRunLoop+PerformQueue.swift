/// The perform queue's bound: how many requests it takes from other threads, what a
/// producer does when it is full, and how deep it is.
extension EventRunLoop {
  /// The default of ``performQueueLimit``: 1,048,576 requests (about 150 MB of queued
  /// closures at most, where an unbounded queue flooded by 8 threads for 10 s reached
  /// 18 million requests and 1.7 GB).
  public static let defaultPerformQueueLimit = 1 << 20

  /// The most perform requests the queue takes from other threads. When it is full, a
  /// request waits in one first-come, first-served line, and each batch the loop drains
  /// lets the line's head in: a thread calling ``perform(inModes:name:_:)->PerformRequest``
  /// blocks until its request is in, ``perform(inModes:name:before:_:)`` and
  /// ``performAndWait(inModes:name:deadline:_:)`` until their deadline; a task awaiting
  /// ``submit(inModes:name:_:)`` is suspended, and no thread waits. The
  /// loop's own thread never waits (it would wait for itself): its requests go in over the
  /// limit. Raising the limit lets waiting requests in at once. At least 1.
  ///
  /// ```swift
  /// worker.performQueueLimit = 10_000  // back-pressure on the threads that flood it
  /// ```
  public var performQueueLimit: Int {
    get { state.withLock { $0.performBound.limit } }
    set {
      state.withLock { $0.performBound.limit = max(1, newValue) }
      admitWaitingRequests()
    }
  }

  /// The perform requests queued now (waiting for a pass, in any mode).
  ///
  /// ```swift
  /// print("\(worker.queuedPerformRequests) requests waiting")
  /// ```
  public var queuedPerformRequests: Int {
    published.performCount.load(ordering: .sequentiallyConsistent)
  }

  /// The perform requests waiting for room in a full queue (see ``performQueueLimit``).
  ///
  /// ```swift
  /// print("\(worker.performRequestsWaitingForRoom) producers wait for room")
  /// ```
  public var performRequestsWaitingForRoom: Int {
    state.withLock { $0.performBound.line.count }
  }

  /// The perform requests that never ran because the loop's thread had exited: those
  /// still queued or waiting for room when it exited, and those performed on the loop after
  /// (each is ``PerformRequest/State/abandoned``). A graceful shutdown reports this count
  /// instead of dropping work silently.
  ///
  /// ```swift
  /// try worker.join()
  /// print("\(worker.runLoop.abandonedPerformRequests) requests never ran")
  /// ```
  public var abandonedPerformRequests: Int { state.withLock { $0.performBound.abandoned } }

  /// The most perform requests that were queued at once.
  ///
  /// ```swift
  /// print("the queue reached \(worker.performQueueHighWater) requests")
  /// ```
  public var performQueueHighWater: Int { state.withLock { $0.performBound.highWater } }

  /// Queues `body` like ``perform(inModes:name:_:)->PerformRequest``, but waits for room in a full queue
  /// only until `deadline`.
  ///
  /// ```swift
  /// do {
  ///   try worker.perform(before: .now + .milliseconds(100)) { handle(job) }
  /// } catch let error where error.code.identifier == "queueFull" {
  ///   shed(job)
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - modes: the modes in which it may run (the common modes by default).
  ///   - name: its name in traces.
  ///   - deadline: how long to wait for room when the queue holds ``performQueueLimit``
  ///     requests.
  ///   - body: the work.
  /// - Throws: a ``RunLoopError`` with code `queueFull` (the code the Ports module names
  ///   `RunLoopError.Code.queueFull`) when the queue is still full at `deadline`; the request
  ///   was not queued.
  @discardableResult
  public func perform(
    inModes modes: [LoopMode] = EventRunLoop.commonModesOnly,
    name: String = EventRunLoop.defaultPerformName, before deadline: ContinuousClock.Instant,
    _ body: @escaping @Sendable () -> Void
  ) throws(RunLoopError) -> PerformRequest {
    let request = PerformRequest(name: name, modes: modes, waitable: false, body: body)
    guard enqueue(request, waitingUntil: deadline) else {
      throw RunLoopError(
        code: RunLoopError.Code("queueFull"),
        message:
          "the perform queue of \(self) held \(performQueueLimit) requests until the deadline")
    }
    return request
  }
}
