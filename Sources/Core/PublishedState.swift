import Synchronization

/// Facts about `LoopState` that its lock publishes as atomics, so that a pass with nothing
/// new to do takes no lock: the loop thread reads these, and takes the lock only when one
/// says there is something to look at. Every store happens under the state's lock, and
/// every access is sequentially consistent: together with the fence in `wakeUp()`, a change
/// made before a wake-up is either seen by the pass after it or wakes the loop again.
final class PublishedState: Sendable {
  /// Moves on with every change to what a ``PassSnapshot`` holds.
  let structure = Atomic<UInt64>(0)
  /// How many perform requests are queued.
  let performCount = Atomic<Int>(0)
  /// How many Swift concurrency jobs are queued, in all of the loop's executors.
  let jobCount = Atomic<Int>(0)

  func structureDidChange() {
    structure.wrappingAdd(1, ordering: .sequentiallyConsistent)
  }
}
