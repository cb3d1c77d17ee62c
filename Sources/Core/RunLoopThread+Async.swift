import Glibc

/// Ending a loop thread from async code: ``stop()`` and an awaitable ``join()``.
extension RunLoopThread {
  /// Cancels the thread and stops its loop's run, also a run that has not begun yet: the
  /// stop goes in as a perform request, after the work already queued, so what was queued
  /// before runs first (a plain ``EventRunLoop/stop()`` made while no run is active is
  /// forgotten, as in CoreFoundation). The thread of an entry closure that runs
  /// ``EventRunLoop/runUntilStopped(mode:)`` then ends. A second call only stops the run
  /// under way.
  ///
  /// ```swift
  /// worker.stop()
  /// try await worker.join()
  /// ```
  public func stop() {
    let loop = runLoop
    // The request, then the cancellation, then the stop of the run under way. An entry
    // closure that sees the cancellation skips its run but still runs what is queued, so
    // the request is never left behind for a thread that has ended. Once: a second stop (a
    // graceful shutdown, then a cancellation) would queue a request after the thread ended,
    // abandoned and counted for nothing.
    if requestStopOnce(), !loop.threadHasExited { loop.perform(name: "stop") { loop.stop() } }
    cancel()
    loop.stop()
  }

  /// Waits, suspended (no thread blocks), until the thread has ended and its loop is
  /// finalised, then reaps it.
  ///
  /// ```swift
  /// worker.stop()
  /// try await worker.join()
  /// ```
  ///
  /// - Throws: what the blocking ``join()`` throws: ``RunLoopError/Code/threadFailed`` when
  ///   the entry closure threw; ``RunLoopError/Code/invalidState`` for a detached thread, a
  ///   thread never started, a second join, or a join from the thread itself.
  public func join() async throws(RunLoopError) {
    let handle = try claimJoin()
    let loop = runLoop
    // The loop's exit handlers run on the exiting thread after its last call-out: from
    // there the thread only returns, so the join below does not wait for anything more.
    await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
      if loop.whenThreadExits({ continuation.resume() }) == nil { continuation.resume() }
    }
    try reap(handle)
  }
}
