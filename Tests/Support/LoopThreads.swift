import Glibc
import RunLoopCore
import Synchronization

/// Starts a thread that runs its loop in the default mode (kept alive by an idle source),
/// with one-minute runs, until ``stopLoopThread(_:)``. Returns once `setUp` has run on the
/// thread, and rethrows what it threw (the thread then ends).
public func startLoopThread(
  name: String, setUp: @escaping @Sendable (EventRunLoop) throws -> Void = { _ in }
) throws -> RunLoopThread {
  let ready = Atomic<Bool>(false)
  let setUpFailure = GuardedState<(any Error)?>(nil)
  let thread = RunLoopThread(name: name) { thread in
    do {
      try thread.runLoop.add(CustomInputSource {}, mode: .default)
      try setUp(thread.runLoop)
    } catch {
      setUpFailure.withLock { $0 = error }
      ready.store(true, ordering: .releasing)
      return
    }
    ready.store(true, ordering: .releasing)
    while !thread.isCancelled {
      _ = try thread.runLoop.run(mode: .default, timeout: .seconds(60))
    }
  }
  try thread.start()
  while !ready.load(ordering: .acquiring) { usleep(100) }
  if let failure = setUpFailure.withLock({ $0 }) {
    try thread.join()
    throw failure
  }
  return thread
}

/// Cancels a thread of ``startLoopThread(name:setUp:)``, stops its loop and joins it.
public func stopLoopThread(_ thread: RunLoopThread) {
  thread.cancel()
  thread.runLoop.stop()
  try? thread.join()
}
