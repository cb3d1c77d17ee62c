import RunLoopCore

/// Everything a loop's timer scheduler keeps, guarded by `_TimerScheduler.state`: the
/// timers of each mode key (a concrete mode, or `.common`), the insertion sequence, the
/// timers whose call-outs are running, and the keyed delayed performs.
///
/// A timer is in a mode key through a slot (see LoopTimer+Storage.swift): its first mode
/// key's slot is inline in the timer, further ones in its extras. A slot is *active* while
/// the timer is in that mode, and *linked* while it also has nodes in the mode's heaps
/// (not while the timer is suspended or its call-out runs).
struct _SchedulerState {
  /// The timers of each mode key, in the order the keys were first used. A mode key's
  /// position here is what slots and heaps call its `mode`.
  var modes: [_ModeTimers] = []
  /// The positions of mode keys past the first four (see ``index(of:)``).
  var modeIndex: [LoopMode: Int] = [:]
  /// The next insertion sequence number.
  var nextSequence: UInt64 = 1
  /// Delayed performs that carry a key, for ``EventRunLoop/cancelDelayedPerforms(key:)``.
  var delayedByKey: [String: [LoopTimer]] = [:]
  /// Whether the loop's thread has exited (nothing is linked again, for good).
  var exited = false
  /// The timers whose call-outs are running, innermost last (unlinked meanwhile).
  var firing: [LoopTimer] = []

  /// How many timers are linked in `mode` (not through `.common`).
  func count(in mode: LoopMode) -> Int {
    guard let index = index(of: mode) else { return 0 }
    return modes[index].count
  }

  /// The position of `mode`. The first few keys are compared directly: a loop's timers are
  /// usually in one or two mode keys, and comparing a short mode name is cheaper than
  /// hashing it.
  func index(of mode: LoopMode) -> Int? {
    for index in 0..<min(modes.count, 4) where modes[index].mode == mode { return index }
    return modes.count > 4 ? modeIndex[mode] : nil
  }

  /// The position of `mode`, added if it has none.
  mutating func index(adding mode: LoopMode) -> Int {
    if let index = index(of: mode) { return index }
    modes.append(_ModeTimers(mode: mode, index: modes.count))
    if modes.count > 4 { modeIndex[mode] = modes.count - 1 }
    return modes.count - 1
  }

  mutating func takeSequence() -> UInt64 {
    defer { nextSequence &+= 1 }
    return nextSequence
  }

  // MARK: Membership

  /// Adds `timer` to `mode`. Returns whether a wake-up deadline of some mode moved earlier.
  mutating func add(_ timer: LoopTimer, to mode: LoopMode) -> Bool {
    if timer.sequence == 0 { timer.sequence = takeSequence() }
    let index = index(adding: mode)
    // The usual timer (first mode key, no extras): straight into the inline slot.
    if timer.firstMode == LoopTimer.noMode, !timer.hasExtras, index < LoopTimer.noMode {
      timer.firstMode = UInt16(index)
      timer.firstFlags = LoopTimer.activeFlag
      return link(timer, slot: 0, mode: index)
    }
    let position: Int
    if let existing = timer.slotPosition(ofMode: index), var slot = timer.slot(at: existing) {
      guard !slot.active else { return false }
      slot.active = true
      timer.setSlot(slot, at: existing)
      position = existing
    } else {
      position = timer.appendSlot(_TimerSlot(mode: index, active: true))
    }
    guard timer.suspendedRemaining == nil else { return false }
    return link(timer, slot: position, mode: index)
  }

  /// Takes `timer` out of `mode`; it stays attached to the loop. Returns whether it was in
  /// that mode.
  @discardableResult
  mutating func remove(_ timer: LoopTimer, from mode: LoopMode) -> Bool {
    guard let index = index(of: mode), let position = timer.slotPosition(ofMode: index),
      timer.slot(at: position)?.active == true
    else { return false }
    unlink(timer, slot: position)
    var slot = timer.slot(at: position)!
    slot.active = false
    timer.setSlot(slot, at: position)
    return true
  }

  /// Links `timer`'s slot at `position` (in mode key `mode`): inserts its nodes. Returns
  /// whether the mode's earliest wake-up moved earlier.
  private mutating func link(_ timer: LoopTimer, slot position: Int, mode: Int) -> Bool {
    let before = modes[mode].earliestWake
    // A timer without extras has never had a tolerance.
    let tolerant = timer.hasExtras && timer.scheduledTolerance > .zero
    modes[mode].insert(timer, tolerant: tolerant)
    guard let before else { return true }
    // The mode's heaps already know its earliest wake-up: no second key for the timer.
    return modes[mode].earliestWake.map { $0 < before } ?? false
  }

  /// Takes the nodes of `timer`'s slot at `position` out of their heaps; returns whether it
  /// had any.
  @discardableResult
  private mutating func unlink(_ timer: LoopTimer, slot position: Int) -> Bool {
    guard let slot = timer.slot(at: position), slot.fireIndex >= 0 || slot.wakeIndex >= 0
    else { return false }
    modes[slot.mode].remove(slot)
    return true
  }

  /// Takes `timer` out of every heap (invalidation, suspension, firing). Returns whether it
  /// was in any.
  @discardableResult
  mutating func unlinkAll(_ timer: LoopTimer) -> Bool {
    guard !exited else { return false }
    // The usual timer: one node, in the exact heap of its inline slot's mode key.
    if !timer.hasExtras {
      let index = Int(timer.firstFireIndex)
      guard timer.firstMode != LoopTimer.noMode, index >= 0 else { return false }
      modes[Int(timer.firstMode)].exact.remove(at: index)
      return true
    }
    var unlinked = false
    for position in 0..<timer.slotEnd where unlink(timer, slot: position) { unlinked = true }
    return unlinked
  }

  /// Links again every active slot of `timer` that is not linked (after a suspension or a
  /// call-out). Returns whether a wake-up deadline moved earlier.
  mutating func relink(_ timer: LoopTimer) -> Bool {
    var earlier = false
    for position in 0..<timer.slotEnd {
      guard let slot = timer.slot(at: position), slot.active, slot.fireIndex < 0 else {
        continue
      }
      if link(timer, slot: position, mode: slot.mode) { earlier = true }
    }
    return earlier
  }

  // MARK: Changing a schedule

  /// Sets the fire date and tolerance of an attached, running timer and moves its nodes.
  /// Returns whether a wake-up deadline of some mode moved earlier.
  mutating func reschedule(
    _ timer: LoopTimer, fireDate: ContinuousClock.Instant, tolerance: Duration
  ) -> Bool {
    let dateChanged = fireDate != timer.scheduledFireDate
    // The linked slots, and each one's mode's earliest wake-up before the change.
    var linked: [(position: Int, mode: Int, before: Int64?)] = []
    for position in 0..<timer.slotEnd {
      guard let slot = timer.slot(at: position), slot.fireIndex >= 0 else { continue }
      linked.append((position, slot.mode, modes[slot.mode].earliestWake))
    }
    // A timer whose tolerance becomes zero or stops being zero changes heaps.
    let changesHeaps = (tolerance > .zero) != (timer.scheduledTolerance > .zero)
    if changesHeaps {
      for slot in linked { unlink(timer, slot: slot.position) }
    }
    timer.scheduledFireDate = fireDate
    timer.scheduledTolerance = tolerance
    if dateChanged { timer.sequence = takeSequence() }
    if changesHeaps {
      for slot in linked { _ = link(timer, slot: slot.position, mode: slot.mode) }
    } else {
      reposition(timer)
    }
    return linked.contains { slot in
      guard let after = modes[slot.mode].earliestWake else { return false }
      return slot.before.map { after < $0 } ?? true
    }
  }

  /// Moves `timer`'s nodes after its keys changed. Allocates nothing.
  private mutating func reposition(_ timer: LoopTimer) {
    if !timer.hasExtras {
      let index = Int(timer.firstFireIndex)
      if timer.firstMode != LoopTimer.noMode, index >= 0 {
        modes[Int(timer.firstMode)].exact.update(at: index)
      }
      return
    }
    for position in 0..<timer.slotEnd {
      guard let slot = timer.slot(at: position) else { continue }
      modes[slot.mode].update(slot)
    }
  }

  // MARK: Firing

  /// The next timer to fire in `mode` (and `.common` when `common`) at `now`, with the fire
  /// date it was due at and its sequence then; `nil` when none is due. Only timers
  /// scheduled before sequence `horizon` qualify: one (re)scheduled since, even into the
  /// past, neither qualifies nor holds back the others.
  ///
  /// The timer is unlinked and marked firing until ``finishFiring(_:takenSequence:now:)``:
  /// while its call-out runs, no nested run fires it again or wakes for it (CFRunLoop skips
  /// a firing timer), yet it still keeps its modes from being empty. Allocates nothing once
  /// `firing` has grown to the deepest nesting of timer call-outs.
  mutating func takeDue(
    in mode: LoopMode, common: Bool, now: Int64, before horizon: UInt64
  ) -> (timer: LoopTimer, dueAt: ContinuousClock.Instant, sequence: UInt64)? {
    while true {
      var best: (node: _TimerHeap.Node, rank: (Int64, UInt64))?
      if let index = index(of: mode) {
        best = modes[index].firstDue(now: now, before: horizon)
      }
      if common, let index = index(of: .common),
        let shared = modes[index].firstDue(now: now, before: horizon),
        best.map({ shared.rank < $0.rank }) ?? true
      {
        best = shared
      }
      guard let node = best?.node else { return nil }
      let timer = node.timer.takeUnretainedValue()
      let dueAt = timer.scheduledFireDate
      unlinkAll(timer)
      // Invalidated by another thread that has not yet reached this lock: drop it.
      guard timer.isValid else { continue }
      firing.append(timer)
      return (timer, dueAt, timer.sequence)
    }
  }

  /// Ends the firing of `timer` that ``takeDue(in:common:now:before:)`` began, at `now` (a
  /// key read after the call-out returned). A one-shot timer is invalidated now, after its
  /// call-out (inside it `isValid` was `true`, as in CFRunLoop). A repeating timer that is
  /// still valid and not suspended is linked again: at the fire date its call-out set, if
  /// it set one, else at the first grid point later than `now`.
  mutating func finishFiring(_ timer: LoopTimer, takenSequence: UInt64, now: Int64) {
    if let index = firing.lastIndex(where: { $0 === timer }) { firing.remove(at: index) }
    guard !exited else { return }
    guard timer.repeats else {
      _ = timer.markInvalid()
      // A mode it joined during its call-out linked it again.
      unlinkAll(timer)
      return
    }
    guard timer.isValid, timer.suspendedRemaining == nil else { return }
    if timer.sequence == takenSequence {
      advance(timer, now: now)
      timer.sequence = takeSequence()
    }
    // Slots linked during the call-out (a mode joined) move to the new date; the others
    // are linked again.
    reposition(timer)
    _ = relink(timer)
  }

  /// Whether a timer whose call-out is running keeps `mode` from being empty: it is valid,
  /// not suspended, and active in `mode` (or in `.common`, when `mode` is common).
  func firingKeepsModeAlive(_ mode: LoopMode, common: Bool) -> Bool {
    guard !firing.isEmpty else { return false }
    let own = index(of: mode)
    let shared = common ? index(of: .common) : nil
    func isActive(_ timer: LoopTimer, in index: Int?) -> Bool {
      guard let index, let position = timer.slotPosition(ofMode: index) else { return false }
      return timer.slot(at: position)?.active ?? false
    }
    return firing.contains { timer in
      timer.isValid && timer.suspendedRemaining == nil
        && (isActive(timer, in: own) || isActive(timer, in: shared))
    }
  }

  /// Moves a repeating timer's fire date to its next grid point after `now` (a key).
  private func advance(_ timer: LoopTimer, now: Int64) {
    if let interval = timer.inlineIntervalNanoseconds,
      let next = _TimerClock.nextGridKey(from: timer.fireKey, after: now, interval: interval)
    {
      // Exact key, exact interval: integer arithmetic, and the key stays exact.
      timer.fireKey = next
      return
    }
    guard let interval = timer.interval else { return }
    timer.scheduledFireDate = _TimerClock.nextGridPoint(
      from: timer.scheduledFireDate, after: LoopClock.instant(ofNanoseconds: now),
      interval: interval)
  }

  // MARK: Wake-ups

  /// When the loop must wake for the timers of `mode` (and `.common` when `common`), as a
  /// key: see `_TolerantTimers` for the rule.
  func wakeKey(in mode: LoopMode, common: Bool) -> Int64? {
    let own = index(of: mode)
    let shared = common ? index(of: .common) : nil
    guard
      let limit = earlier(
        own.flatMap { modes[$0].earliestWake }, shared.flatMap { modes[$0].earliestWake })
    else { return nil }
    let wake = later(
      own.flatMap { modes[$0].latestFireKey(atMost: limit) },
      shared.flatMap { modes[$0].latestFireKey(atMost: limit) })
    return wake ?? limit
  }

  private func earlier(_ first: Int64?, _ second: Int64?) -> Int64? {
    guard let first, let second else { return first ?? second }
    return min(first, second)
  }

  private func later(_ first: Int64?, _ second: Int64?) -> Int64? {
    guard let first, let second else { return first ?? second }
    return max(first, second)
  }

  /// Whether every heap is ordered and every recorded position is right (for tests).
  func isConsistent() -> Bool {
    modes.allSatisfy { $0.isConsistent() }
  }
}

/// The timers linked in one mode key. A timer without tolerance has one node, in `exact`,
/// whose fire order is its wake order; a timer with tolerance has its nodes in `tolerant`.
/// Most timers have no tolerance, and for them the tolerance machinery is two empty heaps.
struct _ModeTimers {
  let mode: LoopMode
  var exact: _TimerHeap
  var tolerant: _TolerantTimers

  init(mode: LoopMode, index: Int) {
    self.mode = mode
    exact = _TimerHeap(order: .fire, mode: index)
    tolerant = _TolerantTimers(mode: index)
  }

  var count: Int { exact.count + tolerant.count }

  /// The earliest end of a tolerance window (an exact timer's ends at its fire date).
  var earliestWake: Int64? {
    guard let end = tolerant.earliestWindowEnd else { return exact.top?.key }
    return min(exact.top?.key ?? end, end)
  }

  /// The latest fire date that is at most `limit`.
  func latestFireKey(atMost limit: Int64) -> Int64? {
    let exactKey = exact.latestKey(atMost: limit)
    guard tolerant.count > 0, let tolerantKey = tolerant.fire.latestKey(atMost: limit) else {
      return exactKey
    }
    return max(exactKey ?? tolerantKey, tolerantKey)
  }

  /// The first due node in fire order (see ``_TimerHeap/firstDue(now:before:)``).
  func firstDue(now: Int64, before horizon: UInt64)
    -> (node: _TimerHeap.Node, rank: (Int64, UInt64))?
  {
    let first = exact.firstDue(now: now, before: horizon)
    guard tolerant.count > 0, let second = tolerant.fire.firstDue(now: now, before: horizon)
    else { return first }
    guard let first else { return second }
    return second.rank < first.rank ? second : first
  }

  mutating func insert(_ timer: LoopTimer, tolerant isTolerant: Bool) {
    if isTolerant { tolerant.insert(timer) } else { exact.insert(timer) }
  }

  /// Removes the nodes of a slot in this mode key.
  mutating func remove(_ slot: _TimerSlot) {
    if slot.isTolerant {
      tolerant.remove(fireIndex: slot.fireIndex, wakeIndex: slot.wakeIndex)
    } else if slot.fireIndex >= 0 {
      exact.remove(at: slot.fireIndex)
    }
  }

  /// Moves the nodes of a slot in this mode key after its timer's keys changed.
  mutating func update(_ slot: _TimerSlot) {
    if slot.isTolerant {
      tolerant.update(fireIndex: slot.fireIndex, wakeIndex: slot.wakeIndex)
    } else if slot.fireIndex >= 0 {
      exact.update(at: slot.fireIndex)
    }
  }

  /// Every linked timer, once (for the scheduler's shutdown).
  var timers: [LoopTimer] {
    (exact.nodes + tolerant.fire.nodes).map { $0.timer.takeUnretainedValue() }
  }

  mutating func releaseAll() {
    exact.releaseAll()
    tolerant.releaseAll()
  }

  func isConsistent() -> Bool { exact.isConsistent() && tolerant.isConsistent() }
}
