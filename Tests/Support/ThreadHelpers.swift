import Glibc
import RunLoopCore

/// Runs `body` on a fresh ``RunLoopThread`` (so with a fresh run loop), waits for it and
/// returns what it returned or rethrows what it threw.
@discardableResult
public func onNewThread<T: Sendable>(
  _ name: String = "test", _ body: @escaping @Sendable (EventRunLoop) throws -> T
) throws -> T {
  let result = GuardedState<Result<T, any Error>?>(nil)
  let thread = RunLoopThread(name: name) { thread in
    let value = Result { try body(thread.runLoop) }
    result.withLock { $0 = value }
  }
  try thread.start()
  try thread.join()
  return try result.withLock { $0! }.get()
}

/// Keeps the calling thread on its CPU for `duration`, spinning (no sleep): a call-out that
/// takes CPU time, or a wait shorter than a sleep could be.
public func burn(_ duration: Duration) {
  let end = ContinuousClock.now + duration
  while ContinuousClock.now < end {}
}

/// Waits up to `seconds` for `condition`, polling every millisecond; for cross-thread
/// hand-offs in tests. Returns whether the condition came true.
public func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
  let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
  while ContinuousClock.now < deadline {
    if condition() { return true }
    usleep(1000)
  }
  return condition()
}

/// Runs `body` on a new thread that has no run loop (a plain pthread) and waits for it.
public func onPlainThread(_ body: @escaping @Sendable () -> Void) {
  final class Box: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
  }
  var thread = pthread_t()
  let status = pthread_create(
    &thread, nil,
    { argument in
      Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().body()
      return nil
    }, Unmanaged.passRetained(Box(body)).toOpaque())
  precondition(status == 0, "pthread_create failed: \(status)")
  pthread_join(thread, nil)
}
