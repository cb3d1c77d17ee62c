import Glibc
import RunLoopCore
import Synchronization

/// Starts a thread that runs its loop in the default mode (kept alive by an idle source),
/// run after run of at most `runTimeout` (`nil`: runs with no timeout), until
/// ``stopLoopThread(_:)``. Returns once `setUp` has run on the thread, and rethrows what it
/// threw (the thread then ends).
public func startLoopThread(
  name: String, runTimeout: Duration? = .seconds(60),
  setUp: @escaping @Sendable (EventRunLoop) throws -> Void = { _ in }
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
      _ = try thread.runLoop.run(mode: .default, timeout: runTimeout)
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

/// Cancels a thread of ``startLoopThread(name:runTimeout:setUp:)``, stops its loop and joins
/// it. The stop is made twice: at once, for the run under way, and through a perform
/// request, for a run that begins after it (a stop made between two runs is forgotten, and a
/// run with no timeout would never end).
public func stopLoopThread(_ thread: RunLoopThread) {
  thread.cancel()
  let loop = thread.runLoop
  loop.stop()
  loop.perform { loop.stop() }
  try? thread.join()
}
