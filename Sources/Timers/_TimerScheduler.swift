import RunLoopCore

/// The timers of one run loop: the loop's ``LoopDeadlineProvider`` for timers, attached
/// lazily the first time a timer is added to the loop.
///
/// Each mode key (a concrete mode, or `.common`) has two indexed min-heaps: one in fire order
/// `(fireDate, sequence)` and one in wake order `(fireDate + tolerance, sequence)`. With `L`
/// the earliest end of a tolerance window, the loop wakes at the latest fire date that is not
/// after `L`: every timer due by then fires inside its window (wake-up latency included, as
/// long as it is shorter than what is left of the window), and timers whose windows overlap
/// share one wake-up.
///
/// Ownership: the loop holds its scheduler (as a deadline provider) and the scheduler holds
/// its timers; a timer refers back to its scheduler weakly. When the loop's thread exits, the
/// loop lets go of the scheduler, which invalidates and releases every timer still scheduled.
///
/// All state is behind `state` (lock: the scheduler's `GuardedState`). Call-outs run with
/// no lock held.
final class _TimerScheduler: LoopDeadlineProvider, @unchecked Sendable {
  // Guarded by its own lock.
  let state = GuardedState(_SchedulerState())
  // Set once in init and never changed.
  private weak var weakLoop: EventRunLoop?
  /// The loop's ``RunLoopCore/EventRunLoop/id``.
  let loopID: UInt64

  private init(loop: EventRunLoop) {
    self.weakLoop = loop
    self.loopID = loop.id
  }

  deinit {
    // The loop's thread has exited (only then does the loop let go): nothing scheduled here
    // can ever fire. Whoever still holds one of these timers sees it invalid.
    state.withLock { state in
      for heaps in state.heaps {
        for node in heaps.fire.nodes { _ = node.timer.markInvalid() }
      }
    }
  }

  var loop: EventRunLoop? { weakLoop }

  /// The scheduler of `loop` if it has one (it never gets one once its thread has exited).
  static func existing(of loop: EventRunLoop) -> _TimerScheduler? {
    for provider in loop.deadlineProviders {
      if let scheduler = provider as? _TimerScheduler { return scheduler }
    }
    return nil
  }

  /// The scheduler of `loop`, created and plugged in on first use; `nil` when `loop`'s thread
  /// has exited (a scheduler plugged into such a loop would never run and never be freed
  /// before the loop).
  static func of(_ loop: EventRunLoop) -> _TimerScheduler? {
    schedulersCreated.withLock { created -> _TimerScheduler? in
      if let scheduler = existing(of: loop) { return scheduler }
      guard !loop.threadHasExited else { return nil }
      let scheduler = _TimerScheduler(loop: loop)
      loop.addDeadlineProvider(scheduler)
      // The thread may have exited between the check and the add; its exit either removed
      // the scheduler already or happens after this check.
      if loop.threadHasExited {
        loop.removeDeadlineProvider(scheduler)
        return nil
      }
      created += 1
      return scheduler
    }
  }

  /// Wakes the loop when a change made off its thread moved a deadline earlier.
  func wakeIfNeeded(_ earlier: Bool) {
    guard earlier, let loop, !loop.isCurrent else { return }
    loop.wakeUp()
  }

  // MARK: LoopDeadlineProvider

  func hasItems(in mode: LoopMode, of loop: EventRunLoop) -> Bool {
    let common = loop.isCommonMode(mode)
    return state.withLock { state in
      state.count(in: mode) > 0 || (common && state.count(in: .common) > 0)
    }
  }

  func nextDeadline(in mode: LoopMode, of loop: EventRunLoop) -> ContinuousClock.Instant? {
    let common = loop.isCommonMode(mode)
    return state.withLock { state in
      // L: the earliest end of a tolerance window.
      var limit = state.wakeTop(in: mode)
      if common, let shared = state.wakeTop(in: .common) {
        limit = limit.map { min($0, shared) } ?? shared
      }
      guard let limit else { return nil }
      // Waking at L itself would put every call-out after its window by the wake-up
      // latency. Waking at the latest fire date not after L fires the same timers (none has
      // a fire date between it and L), each inside its window. The traversal visits only
      // the timers that fire at that wake-up.
      var wake = state.latestFireDate(in: mode, atMost: limit)
      if common, let shared = state.latestFireDate(in: .common, atMost: limit) {
        wake = wake.map { max($0, shared) } ?? shared
      }
      return wake ?? limit
    }
  }

  func fireDue(in mode: LoopMode, of loop: EventRunLoop, now: ContinuousClock.Instant) {
    let common = loop.isCommonMode(mode)
    // Timers (re)scheduled from here on, by the call-outs below or by other threads, wait
    // for the next pass, as the guide says of a timer that comes due during a handler.
    let horizon = state.withLock { $0.nextSequence }
    while let due = state.withLock({
      $0.takeDue(in: mode, common: common, now: now, before: horizon)
    }) {
      let timer = due.timer
      loop.withCallout(.timer, name: timer.name, dueAt: due.dueAt) { timer.handler(timer) }
    }
  }
}

// Serialises "find or create" of a loop's scheduler, and counts the schedulers created. (A
// `GuardedState<Void>` would do, but ThreadSanitizer misreports accesses to a zero-sized
// guarded value as races.)
private let schedulersCreated = GuardedState(0)

/// Everything a loop's scheduler keeps, guarded by `_TimerScheduler.state`.
struct _SchedulerState {
  /// The heaps of each mode key, in the order the keys were first used.
  var heaps: [_ModeHeaps] = []
  var heapIndexByMode: [LoopMode: Int] = [:]
  /// The next insertion sequence number.
  var nextSequence: UInt64 = 1
  /// Delayed performs that carry a key, for ``EventRunLoop/cancelDelayedPerforms(key:)``.
  var delayedByKey: [String: [LoopTimer]] = [:]

  func count(in mode: LoopMode) -> Int {
    guard let index = heapIndexByMode[mode] else { return 0 }
    return heaps[index].fire.count
  }

  func wakeTop(in mode: LoopMode) -> ContinuousClock.Instant? {
    guard let index = heapIndexByMode[mode], let top = heaps[index].wake.top else { return nil }
    return top.timer.entry.latest
  }

  func latestFireDate(in mode: LoopMode, atMost limit: ContinuousClock.Instant)
    -> ContinuousClock.Instant?
  {
    guard let index = heapIndexByMode[mode] else { return nil }
    return heaps[index].fire.latestFireDate(atMost: limit)
  }

  mutating func heapIndex(for mode: LoopMode) -> Int {
    if let index = heapIndexByMode[mode] { return index }
    heaps.append(_ModeHeaps(mode: mode))
    heapIndexByMode[mode] = heaps.count - 1
    return heaps.count - 1
  }

  mutating func takeSequence() -> UInt64 {
    defer { nextSequence &+= 1 }
    return nextSequence
  }

  /// Adds `timer` to `mode`. Returns whether a wake-up deadline of some mode moved earlier.
  mutating func add(_ timer: LoopTimer, to mode: LoopMode) -> Bool {
    let entry = timer.entry
    if entry.sequence == 0 { entry.sequence = takeSequence() }
    let heapIndex = heapIndex(for: mode)
    let slot: Int
    if let existing = entry.slots.firstIndex(where: { $0.heapIndex == heapIndex }) {
      guard !entry.slots[existing].active else { return false }
      entry.slots[existing].active = true
      slot = existing
    } else {
      entry.slots.append(_TimerSlot(heapIndex: heapIndex, active: true))
      slot = entry.slots.count - 1
    }
    guard entry.suspendedRemaining == nil else { return false }
    let before = heaps[heapIndex].wake.top.map { $0.timer.entry.latest }
    let node = _TimerHeapNode(timer: timer, slot: slot)
    heaps[heapIndex].fire.insert(node)
    heaps[heapIndex].wake.insert(node)
    return before.map { entry.latest < $0 } ?? true
  }

  /// Takes `timer` out of `mode`; it stays attached to the loop. Returns whether it was in
  /// that mode.
  @discardableResult
  mutating func remove(_ timer: LoopTimer, from mode: LoopMode) -> Bool {
    let entry = timer.entry
    guard let heapIndex = heapIndexByMode[mode],
      let slot = entry.slots.firstIndex(where: { $0.heapIndex == heapIndex && $0.active })
    else { return false }
    unlink(entry, slot: slot)
    entry.slots[slot].active = false
    return true
  }

  /// Takes `timer` out of every heap (invalidation, suspension, one-shot firing).
  mutating func unlinkAll(_ timer: LoopTimer) {
    let entry = timer.entry
    for slot in entry.slots.indices { unlink(entry, slot: slot) }
  }

  private mutating func unlink(_ entry: _TimerEntry, slot: Int) {
    let heapIndex = entry.slots[slot].heapIndex
    if entry.slots[slot].fireIndex >= 0 {
      heaps[heapIndex].fire.remove(at: entry.slots[slot].fireIndex)
    }
    if entry.slots[slot].wakeIndex >= 0 {
      heaps[heapIndex].wake.remove(at: entry.slots[slot].wakeIndex)
    }
  }

  /// Puts a suspended timer back in the heaps of its active modes. Returns whether a wake-up
  /// deadline moved earlier.
  mutating func relink(_ timer: LoopTimer) -> Bool {
    let entry = timer.entry
    var earlier = false
    for slot in entry.slots.indices where entry.slots[slot].active {
      let heapIndex = entry.slots[slot].heapIndex
      if entry.slots[slot].fireIndex < 0 {
        let before = heaps[heapIndex].wake.top.map { $0.timer.entry.latest }
        let node = _TimerHeapNode(timer: timer, slot: slot)
        heaps[heapIndex].fire.insert(node)
        heaps[heapIndex].wake.insert(node)
        if before.map({ entry.latest < $0 }) ?? true { earlier = true }
      }
    }
    return earlier
  }

  /// Sets the fire date and tolerance of a scheduled timer and moves it in every heap.
  /// Returns whether a wake-up deadline of some mode moved earlier.
  mutating func reschedule(
    _ timer: LoopTimer, fireDate: ContinuousClock.Instant, tolerance: Duration
  ) -> Bool {
    let entry = timer.entry
    let dateChanged = fireDate != entry.fireDate
    var earlier = false
    // Compare each heap's earliest wake-up before and after the change.
    var befores: [ContinuousClock.Instant?] = []
    for slot in entry.slots where slot.wakeIndex >= 0 {
      befores.append(heaps[slot.heapIndex].wake.top.map { $0.timer.entry.latest })
    }
    entry.fireDate = fireDate
    entry.tolerance = tolerance
    if dateChanged { entry.sequence = takeSequence() }
    reposition(entry)
    var position = 0
    for slot in entry.slots where slot.wakeIndex >= 0 {
      let after = heaps[slot.heapIndex].wake.top.map { $0.timer.entry.latest }
      if let after, befores[position].map({ after < $0 }) ?? true { earlier = true }
      position += 1
    }
    return earlier
  }

  /// Moves `entry`'s nodes after its key changed. Allocates nothing.
  private mutating func reposition(_ entry: _TimerEntry) {
    for slot in entry.slots.indices {
      let heapIndex = entry.slots[slot].heapIndex
      if entry.slots[slot].fireIndex >= 0 {
        heaps[heapIndex].fire.restore(at: entry.slots[slot].fireIndex)
      }
      if entry.slots[slot].wakeIndex >= 0 {
        heaps[heapIndex].wake.restore(at: entry.slots[slot].wakeIndex)
      }
    }
  }

  /// The next timer to fire in `mode` at `now`, already rescheduled (repeating) or taken
  /// out (one-shot), with the fire date it was due at; `nil` when none is due. Only timers
  /// scheduled before sequence `horizon` qualify; one (re)scheduled since, even into the
  /// past, neither qualifies nor holds back the others. Allocates nothing.
  mutating func takeDue(
    in mode: LoopMode, common: Bool, now: ContinuousClock.Instant, before horizon: UInt64
  ) -> (timer: LoopTimer, dueAt: ContinuousClock.Instant)? {
    while true {
      var best: (node: _TimerHeapNode, key: (ContinuousClock.Instant, UInt64))?
      if let index = heapIndexByMode[mode] {
        best = heaps[index].fire.firstDue(now: now, before: horizon)
      }
      if common, let index = heapIndexByMode[.common],
        let shared = heaps[index].fire.firstDue(now: now, before: horizon),
        best.map({ shared.key < $0.key }) ?? true
      {
        best = shared
      }
      guard let node = best?.node else { return nil }
      let timer = node.timer
      let entry = timer.entry
      let dueAt = entry.fireDate
      if let interval = entry.interval {
        // Invalidated by another thread that has not yet reached this lock: drop it.
        guard timer.isValid else {
          unlinkAll(timer)
          continue
        }
        entry.fireDate = entry.nextGridPoint(after: now, interval: interval)
        entry.sequence = takeSequence()
        reposition(entry)
      } else {
        unlinkAll(timer)
        // Whoever clears the flag owns the timer's end; an invalidated timer does not fire.
        guard timer.markInvalid() else { continue }
      }
      return (timer, dueAt)
    }
  }

  /// Whether every heap is ordered and every stored position is right (for tests).
  func isConsistent() -> Bool {
    heaps.allSatisfy { heaps in
      heaps.fire.isConsistent { $0.timer.entry.slots[$0.slot].fireIndex }
        && heaps.wake.isConsistent { $0.timer.entry.slots[$0.slot].wakeIndex }
    }
  }
}

/// The two heaps of one mode key.
struct _ModeHeaps {
  let mode: LoopMode
  var fire = _TimerHeap(order: .fire)
  var wake = _TimerHeap(order: .wake)
}
