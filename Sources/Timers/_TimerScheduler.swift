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
    var heaps = state.withLock { state -> [_ModeHeaps] in
      for heaps in state.heaps {
        for node in heaps.exact.nodes { _ = node.timer.markInvalid() }
        for node in heaps.fire.nodes { _ = node.timer.markInvalid() }
      }
      defer { state.heaps = [] }
      return state.heaps
    }
    // Outside the lock: this may free timers and what their handlers captured.
    for index in heaps.indices {
      heaps[index].exact.releaseAll()
      heaps[index].fire.releaseAll()
      heaps[index].wake.releaseAll()
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
    return heaps[index].count
  }

  func wakeTop(in mode: LoopMode) -> ContinuousClock.Instant? {
    guard let index = heapIndexByMode[mode], let top = heaps[index].wakeTop else { return nil }
    return _TimerClock.instant(at: top)
  }

  func latestFireDate(in mode: LoopMode, atMost limit: ContinuousClock.Instant)
    -> ContinuousClock.Instant?
  {
    guard let index = heapIndexByMode[mode] else { return nil }
    return heaps[index].latestFireDate(atMost: limit)
  }

  mutating func heapIndex(for mode: LoopMode) -> Int {
    if let index = heapIndexByMode[mode] { return index }
    heaps.append(_ModeHeaps(mode: mode, index: heaps.count))
    heapIndexByMode[mode] = heaps.count - 1
    return heaps.count - 1
  }

  mutating func takeSequence() -> UInt64 {
    defer { nextSequence &+= 1 }
    return nextSequence
  }

  /// Adds `timer` to `mode`. Returns whether a wake-up deadline of some mode moved earlier.
  mutating func add(_ timer: LoopTimer, to mode: LoopMode) -> Bool {
    if timer.entry.sequence == 0 { timer.entry.sequence = takeSequence() }
    let heapIndex = heapIndex(for: mode)
    let slot: Int
    if let existing = timer.entry.slots.firstIndex(where: { $0.heapIndex == heapIndex }) {
      guard !timer.entry.slots[existing].active else { return false }
      timer.entry.slots[existing].active = true
      slot = existing
    } else {
      timer.entry.slots.append(_TimerSlot(heapIndex: heapIndex, active: true))
      slot = timer.entry.slots.count - 1
    }
    guard timer.entry.suspendedRemaining == nil else { return false }
    return link(timer, slot: slot, heapIndex: heapIndex)
  }

  /// Inserts `timer`'s nodes for `slot`. Returns whether the heaps' earliest wake-up moved
  /// earlier.
  private mutating func link(_ timer: LoopTimer, slot: Int, heapIndex: Int) -> Bool {
    let before = heaps[heapIndex].wakeTop
    let node = _TimerHeapNode(timer: timer, order: .wake)
    let tolerant = timer.entry.tolerance > .zero
    timer.entry.slots[slot].tolerant = tolerant
    if tolerant {
      heaps[heapIndex].fire.insert(_TimerHeapNode(timer: timer, order: .fire))
      heaps[heapIndex].wake.insert(node)
    } else {
      // Fire order is wake order: one node does for both.
      heaps[heapIndex].exact.insert(node)
    }
    return before.map { node.date < $0 } ?? true
  }

  /// Takes `timer` out of `mode`; it stays attached to the loop. Returns whether it was in
  /// that mode.
  @discardableResult
  mutating func remove(_ timer: LoopTimer, from mode: LoopMode) -> Bool {
    guard let heapIndex = heapIndexByMode[mode],
      let slot = timer.entry.slots.firstIndex(where: { $0.heapIndex == heapIndex && $0.active })
    else { return false }
    unlink(timer, slot: slot)
    timer.entry.slots[slot].active = false
    return true
  }

  /// Takes `timer` out of every heap (invalidation, suspension, one-shot firing).
  mutating func unlinkAll(_ timer: LoopTimer) {
    for slot in 0..<timer.entry.slots.count { unlink(timer, slot: slot) }
  }

  private mutating func unlink(_ timer: LoopTimer, slot: Int) {
    let position = timer.entry.slots[slot]
    if position.fireIndex >= 0 {
      if position.tolerant {
        heaps[position.heapIndex].fire.remove(at: position.fireIndex)
      } else {
        heaps[position.heapIndex].exact.remove(at: position.fireIndex)
      }
    }
    // Read again: the removal above may not move this timer's wake node, but reading the
    // slot afresh keeps that reasoning out of here.
    let wakeIndex = timer.entry.slots[slot].wakeIndex
    if wakeIndex >= 0 {
      heaps[position.heapIndex].wake.remove(at: wakeIndex)
    }
  }

  /// Puts a suspended timer back in the heaps of its active modes. Returns whether a wake-up
  /// deadline moved earlier.
  mutating func relink(_ timer: LoopTimer) -> Bool {
    var earlier = false
    for slot in timer.entry.slots.indices where timer.entry.slots[slot].active {
      let heapIndex = timer.entry.slots[slot].heapIndex
      if timer.entry.slots[slot].fireIndex < 0, link(timer, slot: slot, heapIndex: heapIndex) {
        earlier = true
      }
    }
    return earlier
  }

  /// Sets the fire date and tolerance of a scheduled timer and moves it in every heap.
  /// Returns whether a wake-up deadline of some mode moved earlier.
  mutating func reschedule(
    _ timer: LoopTimer, fireDate: ContinuousClock.Instant, tolerance: Duration
  ) -> Bool {
    let dateChanged = fireDate != timer.entry.fireDate
    var earlier = false
    // Compare each heap's earliest wake-up before and after the change.
    var befores: [Duration?] = []
    for slot in timer.entry.slots where slot.fireIndex >= 0 {
      befores.append(heaps[slot.heapIndex].wakeTop)
    }
    // A timer whose tolerance becomes zero or stops being zero changes heaps.
    let changesHeaps = (tolerance > .zero) != (timer.entry.tolerance > .zero)
    var linked: [Int] = []
    if changesHeaps {
      for slot in 0..<timer.entry.slots.count where timer.entry.slots[slot].fireIndex >= 0 {
        linked.append(slot)
        unlink(timer, slot: slot)
      }
    }
    timer.entry.fireDate = fireDate
    timer.entry.tolerance = tolerance
    if dateChanged { timer.entry.sequence = takeSequence() }
    if changesHeaps {
      for slot in linked {
        _ = link(timer, slot: slot, heapIndex: timer.entry.slots[slot].heapIndex)
      }
    } else {
      reposition(timer)
    }
    var position = 0
    for slot in timer.entry.slots where slot.fireIndex >= 0 {
      let after = heaps[slot.heapIndex].wakeTop
      if let after, befores[position].map({ after < $0 }) ?? true { earlier = true }
      position += 1
    }
    return earlier
  }

  /// Moves `timer`'s nodes after its key changed. Allocates nothing.
  private mutating func reposition(_ timer: LoopTimer) {
    for slot in timer.entry.slots.indices {
      let heapIndex = timer.entry.slots[slot].heapIndex
      let fireIndex = timer.entry.slots[slot].fireIndex
      if fireIndex >= 0 {
        if timer.entry.slots[slot].tolerant {
          heaps[heapIndex].fire.restore(at: fireIndex)
        } else {
          heaps[heapIndex].exact.restore(at: fireIndex)
        }
      }
      let wakeIndex = timer.entry.slots[slot].wakeIndex
      if wakeIndex >= 0 { heaps[heapIndex].wake.restore(at: wakeIndex) }
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
      var best: (node: _TimerHeapNode, key: (Duration, UInt64))?
      if let index = heapIndexByMode[mode] {
        best = heaps[index].firstDue(now: now, before: horizon)
      }
      if common, let index = heapIndexByMode[.common],
        let shared = heaps[index].firstDue(now: now, before: horizon),
        best.map({ shared.key < $0.key }) ?? true
      {
        best = shared
      }
      guard let node = best?.node else { return nil }
      let timer = node.timer
      let dueAt = timer.entry.fireDate
      if let interval = timer.interval {
        // Invalidated by another thread that has not yet reached this lock: drop it.
        guard timer.isValid else {
          unlinkAll(timer)
          continue
        }
        timer.entry.fireDate = timer.entry.nextGridPoint(after: now, interval: interval)
        timer.entry.sequence = takeSequence()
        reposition(timer)
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
      heaps.exact.isConsistent() && heaps.fire.isConsistent() && heaps.wake.isConsistent()
        && heaps.fire.count == heaps.wake.count
    }
  }
}

/// The heaps of one mode key. A timer without tolerance has one node, in `exact`: its fire
/// order is its wake order. A timer with tolerance has a node in `fire` and one in `wake`.
/// Most timers have no tolerance, so most need one node, not two.
struct _ModeHeaps {
  let mode: LoopMode
  var exact: _TimerHeap
  var fire: _TimerHeap
  var wake: _TimerHeap

  init(mode: LoopMode, index: Int) {
    self.mode = mode
    exact = _TimerHeap(order: .fire, heapIndex: index)
    fire = _TimerHeap(order: .fire, heapIndex: index)
    wake = _TimerHeap(order: .wake, heapIndex: index)
  }

  /// How many timers are linked here.
  var count: Int { exact.count + fire.count }

  /// The earliest end of a tolerance window, as an offset from ``_TimerClock/origin``.
  var wakeTop: Duration? {
    switch (exact.top?.date, wake.top?.date) {
    case (let first?, let second?): return min(first, second)
    case (let first, let second): return first ?? second
    }
  }

  /// The latest fire date that is at most `limit` (see ``_TimerHeap/latestFireDate(atMost:)``).
  func latestFireDate(atMost limit: ContinuousClock.Instant) -> ContinuousClock.Instant? {
    switch (exact.latestFireDate(atMost: limit), fire.latestFireDate(atMost: limit)) {
    case (let first?, let second?): return max(first, second)
    case (let first, let second): return first ?? second
    }
  }

  /// The first due node in fire order of both fire-order heaps (see
  /// ``_TimerHeap/firstDue(now:before:)``).
  func firstDue(now: ContinuousClock.Instant, before horizon: UInt64)
    -> (node: _TimerHeapNode, key: (Duration, UInt64))?
  {
    let first = exact.firstDue(now: now, before: horizon)
    guard let second = fire.firstDue(now: now, before: horizon) else { return first }
    guard let first else { return second }
    return second.key < first.key ? second : first
  }
}
