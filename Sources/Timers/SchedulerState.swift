import RunLoopCore

/// Everything a loop's timer scheduler keeps, guarded by `TimerScheduler.state`: a queue per
/// set of modes that timers are in, the insertion sequence, the timers whose call-outs are
/// running, and the keyed delayed performs.
///
/// A timer is *in* a queue (``LoopTimer/queue``) while it is in at least one mode, and
/// *linked* (has a node in that queue's heap) while it is also neither suspended nor firing.
struct SchedulerState {
  /// One queue per set of modes, in the order first used; a timer names its queue by its
  /// position here. Sets are few (usually one or two), so they are searched in order.
  var queues: [TimerQueue] = []
  /// The next insertion sequence number.
  var nextSequence: UInt64 = 1
  /// Delayed performs that carry a key, for ``EventRunLoop/cancelDelayedPerforms(key:)``.
  var delayedByKey: [String: [LoopTimer]] = [:]
  /// Whether the loop's thread has exited (nothing is linked again, for good).
  var exited = false
  /// The timers whose call-outs are running, innermost last (unlinked meanwhile).
  var firing: [LoopTimer] = []

  mutating func takeSequence() -> UInt64 {
    defer { nextSequence &+= 1 }
    return nextSequence
  }

  /// The modes `timer` is in.
  func modes(of timer: LoopTimer) -> [LoopMode] {
    timer.queue == LoopTimer.noQueue ? [] : queues[Int(timer.queue)].modes
  }

  /// How many timers are linked in `mode` itself (not through `.common`), for tests.
  func count(in mode: LoopMode) -> Int {
    queues.reduce(0) { $0 + ($1.modes.contains(mode) ? $1.count : 0) }
  }

  // MARK: Membership

  /// Adds `timer` to `mode`. Returns whether a wake-up deadline may have moved earlier.
  mutating func add(_ timer: LoopTimer, to mode: LoopMode) -> Bool {
    if timer.sequence == 0 { timer.sequence = takeSequence() }
    guard timer.queue != LoopTimer.noQueue else {
      // The usual timer, in its first mode: no list of modes to build.
      let index =
        queues.firstIndex { $0.modes.count == 1 && $0.modes[0] == mode }
        ?? appendQueue([mode])
      timer.queue = UInt16(index)
      return link(timer)
    }
    let modes = modes(of: timer)
    guard !modes.contains(mode) else { return false }
    return move(timer, to: modes + [mode])
  }

  /// Takes `timer` out of `mode`; it stays attached to the loop. Returns whether it was in
  /// that mode.
  @discardableResult
  mutating func remove(_ timer: LoopTimer, from mode: LoopMode) -> Bool {
    var modes = modes(of: timer)
    guard let index = modes.firstIndex(of: mode) else { return false }
    modes.remove(at: index)
    _ = move(timer, to: modes)
    return true
  }

  /// Moves `timer` to the queue of `modes` (none when empty).
  private mutating func move(_ timer: LoopTimer, to modes: [LoopMode]) -> Bool {
    unlink(timer)
    timer.queue =
      modes.isEmpty
      ? LoopTimer.noQueue : UInt16(queues.firstIndex { $0.holds(modes) } ?? appendQueue(modes))
    return link(timer)
  }

  private mutating func appendQueue(_ modes: [LoopMode]) -> Int {
    precondition(queues.count < Int(LoopTimer.noQueue), "too many sets of modes with timers")
    queues.append(TimerQueue(modes: modes))
    return queues.count - 1
  }

  /// Links `timer` into its queue's heap if it is in a queue and neither linked, suspended
  /// nor firing. Returns whether its queue's wake-up may have moved earlier.
  @discardableResult
  mutating func link(_ timer: LoopTimer) -> Bool {
    guard !exited, timer.queue != LoopTimer.noQueue, timer.heapIndex < 0,
      timer.packed.suspendedRemaining == nil,
      firing.isEmpty || !firing.contains(where: { $0 === timer })
    else { return false }
    return queues[Int(timer.queue)].insert(timer)
  }

  /// Takes `timer` out of its heap (invalidation, suspension, firing, a change of modes).
  /// Returns whether it was linked.
  @discardableResult
  mutating func unlink(_ timer: LoopTimer) -> Bool {
    guard !exited, timer.heapIndex >= 0 else { return false }
    queues[Int(timer.queue)].remove(timer)
    return true
  }

  // MARK: Changing a schedule

  /// Gives an attached, running timer a new schedule and moves its node. Returns whether a
  /// wake-up deadline may have moved earlier.
  mutating func reschedule(_ timer: LoopTimer, to schedule: TimerSchedule) -> Bool {
    let old = timer.packed.schedule
    guard schedule != old else { return false }
    if schedule.date != old.date { timer.sequence = takeSequence() }
    guard timer.heapIndex >= 0 else {
      timer.packed.schedule = schedule
      return false
    }
    return queues[Int(timer.queue)].reschedule(timer, to: schedule)
  }

  // MARK: Firing

  /// The next timer to fire in a run in `mode` at `now`, with the date
  /// it was due at, its sequence then, and whether it repeats; `nil` when none is due. Only
  /// timers scheduled before sequence `horizon` qualify: one (re)scheduled since, even into
  /// the past, neither qualifies nor holds back the others.
  ///
  /// The timer is unlinked and marked firing until ``finishFiring(_:takenSequence:now:)``:
  /// while its call-out runs, no nested run fires it again or wakes for it (CFRunLoop skips
  /// a firing timer), yet it still keeps its modes from being empty.
  mutating func takeDue(
    in mode: ActiveMode, now: Int64, before horizon: UInt64
  ) -> (
    timer: LoopTimer, dueAt: ContinuousClock.Instant, sequence: UInt64, repeats: Bool,
    origin: (cause: CalloutCause, contexts: CapturedContexts)?
  )? {
    while true {
      var best: TimerHeap.Node?
      for queue in queues where queue.count > 0 && queue.serves(mode) {
        guard let node = queue.firstDue(now: now, before: horizon) else { continue }
        if best.map(node.precedes) ?? true { best = node }
      }
      guard let node = best else { return nil }
      let timer = node.timer.takeUnretainedValue()
      let schedule = timer.packed.schedule
      unlink(timer)
      // Invalidated by another thread that has not yet reached this lock: drop it.
      guard timer.isValid else { continue }
      firing.append(timer)
      return (
        timer, TimerClock.instant(at: schedule.date), timer.sequence, schedule.interval != nil,
        timer.packed.cause
      )
    }
  }

  /// Ends the firing of `timer` that ``takeDue(in:now:before:)`` began, at `now` (a
  /// key read after the call-out returned). A one-shot timer is invalidated now, after its
  /// call-out (inside it `isValid` was `true`, as in CFRunLoop). A repeating timer that is
  /// still valid and not suspended is linked again: at the date its call-out set, if it set
  /// one, else at the first grid point later than `now`.
  mutating func finishFiring(_ timer: LoopTimer, takenSequence: UInt64, now: Int64) {
    if let index = firing.lastIndex(where: { $0 === timer }) { firing.remove(at: index) }
    guard !exited else { return }
    guard timer.packed.interval != nil else {
      _ = timer.markInvalid()
      return
    }
    guard timer.isValid else { return }
    if timer.sequence == takenSequence {
      timer.packed.advance(after: now)
      timer.sequence = takeSequence()
    }
    link(timer)
  }

  /// Whether a timer whose call-out is running keeps `mode` from being empty: it is valid,
  /// not suspended, and in a mode a run in `mode` serves.
  func firingKeepsModeAlive(_ mode: ActiveMode) -> Bool {
    firing.contains { timer in
      timer.isValid && timer.packed.suspendedRemaining == nil
        && timer.queue != LoopTimer.noQueue
        && queues[Int(timer.queue)].serves(mode)
    }
  }

  // MARK: Wake-ups

  /// When the loop must wake for the timers a run in `mode` serves, as a key: the latest date not after the earliest end of a window (see ``TimerQueue``).
  func wakeKey(in mode: ActiveMode) -> Int64? {
    var limit: Int64?
    var tolerant = false
    for queue in queues where queue.count > 0 && queue.serves(mode) {
      let end = queue.earliestLatestKey()!
      limit = min(limit ?? end, end)
      tolerant = tolerant || queue.tolerantCount > 0
    }
    guard let limit, tolerant else { return limit }
    var wake: Int64?
    for queue in queues where queue.count > 0 && queue.serves(mode) {
      if let key = queue.latestKey(atMost: limit) { wake = max(wake ?? key, key) }
    }
    return wake ?? limit
  }

  /// Whether every heap is ordered, every recorded position right, and every tolerant
  /// timer counted (for tests).
  func isConsistent() -> Bool {
    queues.allSatisfy { queue in
      queue.heap.isConsistent()
        && queue.tolerantCount
          == queue.heap.nodes.filter { $0.timer.takeUnretainedValue().packed.hasTolerance }.count
    }
  }
}
