import Dispatch

/// The bound of a loop's perform queue and the producers waiting for room, kept in
/// `LoopState` under the loop's lock.
///
/// Policy when the queue is full: the producer waits for room (the loop drains the queue a
/// batch at a time, and every drained batch wakes the waiting producers), for ever with
/// ``EventRunLoop/perform(inModes:name:_:)->PerformRequest``, until a deadline with
/// ``EventRunLoop/perform(inModes:name:before:_:)``, which then throws `queueFull`, as
/// `InProcessPort.send(_:before:)` does. Waiting rather than dropping, because a perform
/// request is work a caller handed over and cannot see lost; waiting rather than failing
/// at once, because a flood from other threads is the case the bound is for, and its
/// producers are the ones to slow down. The loop's own thread never waits (it would wait
/// for itself): its requests go in over the bound.
struct PerformQueueBound {
  /// The most requests the queue takes from other threads.
  var limit = EventRunLoop.defaultPerformQueueLimit
  /// The most requests that were queued at once.
  var highWater = 0
  /// Producers waiting for room, each on its own semaphore.
  var waiters: [DispatchSemaphore] = []

  /// Takes the waiting producers, to be woken once the lock is released.
  mutating func takeWaiters() -> [DispatchSemaphore] {
    guard !waiters.isEmpty else { return [] }
    defer { waiters.removeAll() }
    return waiters
  }
}
