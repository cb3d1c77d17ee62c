import RunLoopCore

/// A RunLoopThread running its loop (kept alive by an idle source) until stopped.
final class OurLoopThread: Sendable {
  let thread: RunLoopThread
  let keepAlive = CustomInputSource(name: "keep-alive") {}

  init(name: String, setUp: @escaping @Sendable (EventRunLoop) throws -> Void = { _ in }) throws {
    let keepAlive = keepAlive
    thread = RunLoopThread(name: name) { thread in
      let loop = EventRunLoop.current
      try loop.add(keepAlive, mode: .default)
      try setUp(loop)
      while !thread.isCancelled {
        _ = try loop.run(mode: .default, timeout: .seconds(1))
      }
    }
    try thread.start()
  }

  var loop: EventRunLoop { thread.runLoop }

  /// Stops the loop and joins its thread.
  func stop() throws {
    thread.cancel()
    loop.stop()
    try thread.join()
  }
}

/// Runs `body` on a new thread (so the loop it uses is a fresh, non-main one) and waits.
func onFreshThread<Result>(_ body: @escaping () throws -> Result) throws -> Result {
  var result: Result?
  var failure: (any Error)?
  let thread = BareThread {
    do { result = try body() } catch { failure = error }
  }
  thread.join()
  if let failure { throw failure }
  return result!
}
