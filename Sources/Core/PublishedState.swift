import Synchronization

/// Facts about `LoopState` that its lock publishes as atomics, so that a pass with nothing
/// new to do takes no lock: the loop thread reads these, and takes the lock only when one
/// says there is something to look at. Every store happens under the state's lock. A store
/// that announces something new (more work, a changed structure) is sequentially
/// consistent, and so is every load: together with the fence in `wakeUp()`, a change made
/// before a wake-up is either seen by the pass after it or wakes the loop again. A store
/// that only takes work away (the loop thread taking a batch) announces nothing a wake-up
/// must be ordered with, so it is a plain release store: on x86 a move, not a locked
/// instruction, once per hop of a ping-pong.
final class PublishedState: Sendable {
  /// Moves on with every change to what a ``PassSnapshot`` holds.
  let structure = Atomic<UInt64>(0)
  /// How many perform requests are queued.
  let performCount = Atomic<Int>(0)
  /// How many Swift concurrency jobs are queued, in all of the loop's executors.
  let jobCount = Atomic<Int>(0)

  /// Publishes the perform queue's new length (under the state's lock).
  func performCountDidChange(to count: Int) {
    // Relaxed: every store is made under the same lock, so this reads the last one.
    Self.publish(count, in: performCount, grew: count > performCount.load(ordering: .relaxed))
  }

  /// Publishes the queued jobs' total moved on by `delta` (under the state's lock).
  func jobCountDidChange(by delta: Int) {
    Self.publish(jobCount.load(ordering: .relaxed) + delta, in: jobCount, grew: delta > 0)
  }

  /// Stores `count`, sequentially consistent when it `grew` (see the type's comment).
  private static func publish(_ count: Int, in counter: borrowing Atomic<Int>, grew: Bool) {
    if grew {
      counter.store(count, ordering: .sequentiallyConsistent)
    } else {
      counter.store(count, ordering: .releasing)
    }
  }

  func structureDidChange() {
    structure.wrappingAdd(1, ordering: .sequentiallyConsistent)
  }
}
