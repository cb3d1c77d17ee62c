/// Running a loop for a thread's whole life: until stopped, with nothing to watch.
extension EventRunLoop {
  /// Runs the loop in `mode` until ``stop()`` ends the run, then runs the work still queued
  /// (perform requests and Swift concurrency jobs) and returns. Must be called on the
  /// loop's own thread.
  ///
  /// Unlike ``run()`` (CoreFoundation's `CFRunLoopRun`), which returns ``RunResult/finished``
  /// at once when the mode has no sources, timers or ports, this keeps the loop alive with
  /// nothing to watch: a worker that only serves perform requests and actors needs no dummy
  /// source. A thread whose entry closure calls it ends with ``RunLoopThread/stop()``,
  /// which also stops a run that has not begun yet, and after the work queued before it.
  ///
  /// ```swift
  /// let worker = RunLoopThread(name: "worker") { thread in try thread.runLoop.runUntilStopped() }
  /// try worker.start()
  /// worker.runLoop.perform { print("on the worker") }
  /// worker.stop()
  /// try await worker.join()
  /// ```
  ///
  /// - Throws: what ``run(mode:timeout:returnAfterSourceHandled:)`` throws (for example
  ///   ``RunLoopError/Code/notOwningThread`` off the loop's thread).
  public func runUntilStopped(mode: LoopMode = .default) throws(RunLoopError) {
    guard isCurrent else {
      throw .notOwningThread(
        "\(self) belongs to thread \(threadID); only that thread can run it until stopped")
    }
    // Not a source of the user's: an empty mode's run would return `finished` at once.
    let keepAlive = CustomInputSource(name: "keep-alive") {}
    try add(keepAlive, mode: mode)
    defer { remove(keepAlive, mode: mode) }
    let thread = RunLoopThread.current
    while thread?.isCancelled != true {
      if try run(mode: mode, timeout: nil) == .stopped { break }
    }
    try runQueuedWork(mode: mode)
  }

  /// The most passes a stopped loop makes to run the work still queued: work that keeps
  /// queueing more (a request that performs itself again) cannot hold the thread for ever.
  static let drainingPassLimit = 10_000

  /// Runs passes without blocking while perform requests or jobs are queued (at most
  /// ``drainingPassLimit``); what is left is abandoned when the thread exits, and counted
  /// in ``abandonedPerformRequests``.
  func runQueuedWork(mode: LoopMode) throws(RunLoopError) {
    var passes = 0
    while passes < Self.drainingPassLimit,
      published.performCount.load(ordering: .sequentiallyConsistent) > 0
        || published.jobCount.load(ordering: .sequentiallyConsistent) > 0
        || performRequestsWaitingForRoom > 0
    {
      _ = try run(mode: mode, timeout: .zero)
      passes += 1
    }
  }
}
