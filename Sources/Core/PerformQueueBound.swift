import Dispatch

/// The bound of a loop's perform queue and the line of producers waiting for room, kept in
/// `LoopState` under the loop's lock.
///
/// Policy when the queue is full: the request waits in the line for room, and nothing is
/// dropped, because a perform request is work a caller handed over and cannot see lost.
/// How its producer waits depends on the call: a thread calling
/// ``EventRunLoop/perform(inModes:name:_:)->PerformRequest`` blocks until its request is
/// in (for ever; until a deadline with ``EventRunLoop/perform(inModes:name:before:_:)``,
/// which then throws `queueFull`, as `InProcessPort.send(_:before:)` does); a task awaiting
/// ``EventRunLoop/submit(inModes:name:_:)`` is suspended and no thread
/// waits: its request sits in the line and the task resumes when the request has run.
///
/// Order: one line for tasks and threads alike, first come, first served. Each batch the
/// loop takes out of the queue admits requests from the head of the line, as many as there
/// is room for, so a request that waited enters the queue after every request that waited
/// before it, and while anyone waits, newcomers join the line's end instead of passing it.
/// The loop's own thread never waits (it would wait for itself): its requests go in over
/// the bound, ahead of the line.
struct PerformQueueBound {
  /// The most requests the queue takes from other threads.
  var limit = EventRunLoop.defaultPerformQueueLimit
  /// The most requests that were queued at once.
  var highWater = 0
  /// The requests that never ran because the loop's thread had exited.
  var abandoned = 0
  /// The requests waiting for room, in the order they came.
  var line = RequestList()
  /// The blocked threads among the line's producers, by request, each on its own semaphore.
  var blocked: [ObjectIdentifier: DispatchSemaphore] = [:]

  /// Takes the whole line, for a loop whose thread exited: its requests are to be
  /// abandoned and its threads woken, after the lock.
  mutating func takeLine() -> (requests: RequestList, threads: [DispatchSemaphore]) {
    var requests = RequestList()
    swap(&requests, &line)
    defer { blocked.removeAll() }
    return (requests, Array(blocked.values))
  }
}

extension LoopState {
  /// Moves requests from the head of the perform queue's line into the queue while it
  /// holds fewer than the bound's limit; returns the semaphores of the threads whose
  /// requests went in (signal them once the lock is released) and, in `dropped`, the
  /// cancelled requests it let go of (release them after the lock: their closures'
  /// captures may run code).
  mutating func admitWaitingRequests(dropped: inout RequestList) -> [DispatchSemaphore] {
    var admitted: [DispatchSemaphore] = []
    while performQueue.count < performBound.limit, let request = performBound.line.popFirst() {
      if let semaphore = performBound.blocked.removeValue(forKey: ObjectIdentifier(request)) {
        admitted.append(semaphore)
      }
      if request.state == .pending {
        performQueue.append(request)
      } else {
        dropped.append(request)
      }
    }
    performBound.highWater = max(performBound.highWater, performQueue.count)
    return admitted
  }
}
