import Glibc
import RunLoopCore

/// The timers of one run loop. The loop sees it through a `_TimerSchedulerPlug`, its
/// ``DeadlineSource`` for timers, plugged in lazily the first time a timer is added to
/// the loop.
///
/// Each mode key (a concrete mode, or `.common`) has two indexed min-heaps: one in fire order
/// `(fireDate, sequence)` and one in wake order `(fireDate + tolerance, sequence)`. With `L`
/// the earliest end of a tolerance window, the loop wakes at the latest fire date that is not
/// after `L`: every timer due by then fires inside its window (wake-up latency included, as
/// long as it is shorter than what is left of the window), and timers whose windows overlap
/// share one wake-up.
///
/// Ownership: the loop holds the plug, the plug holds the scheduler, the scheduler holds its
/// scheduled timers, and a timer holds the scheduler it joined (strongly: nothing refers to
/// the scheduler weakly, so it has no side table and its reference counting stays on the fast
/// path). When the loop's thread exits, the loop lets go of the plug, whose end shuts the
/// scheduler down: every timer still scheduled is invalidated and released, which breaks
/// the cycles; the scheduler itself goes with the last timer that joined it.
///
/// All state is behind `state` (lock: the scheduler's `GuardedState`). Call-outs run with
/// no lock held.
final class _TimerScheduler: @unchecked Sendable {
  // Guarded by its own lock.
  let state = GuardedState(_SchedulerState())
  // Set once in init and never changed. Weak: the loop's thread, not its timers, keeps a
  // loop alive. Loaded only to wake the loop from another thread and for `runLoop`.
  private weak var weakLoop: EventRunLoop?
  /// The loop's ``RunLoopCore/EventRunLoop/id``.
  let loopID: UInt64

  private init(loop: EventRunLoop) {
    self.weakLoop = loop
    self.loopID = loop.id
  }

  var loop: EventRunLoop? { weakLoop }

  /// The loop's thread has exited: nothing scheduled here can ever fire. Whoever still holds
  /// one of these timers sees it invalid; the scheduler lets go of all of them.
  func shutDown() {
    var (heaps, delayed) = state.withLock {
      state -> ([_ModeHeaps], [String: [LoopTimer]]) in
      state.exited = true
      for heaps in state.heaps {
        for node in heaps.exact.nodes { _ = node.timer.markInvalid() }
        for node in heaps.fire.nodes { _ = node.timer.markInvalid() }
      }
      defer {
        state.heaps = []
        state.heapIndexByMode = [:]
        state.delayedByKey = [:]
      }
      return (state.heaps, state.delayedByKey)
    }
    // Outside the lock: this may free timers and what their handlers captured.
    for index in heaps.indices {
      heaps[index].exact.releaseAll()
      heaps[index].fire.releaseAll()
      heaps[index].wake.releaseAll()
    }
    for timer in delayed.values.joined() { _ = timer.markInvalid() }
    delayed = [:]
  }

  /// The scheduler of `loop` if it has one (it never gets one once its thread has exited).
  static func existing(of loop: EventRunLoop) -> _TimerScheduler? {
    if let cached = cachedForCurrentThread(), cached.loopID == loop.id { return cached }
    for source in loop.deadlineSources {
      if let plug = source as? _TimerSchedulerPlug { return plug.scheduler }
    }
    return nil
  }

  /// The scheduler of `loop`, created and plugged in on first use; `nil` when `loop`'s thread
  /// has exited (a scheduler plugged into such a loop would never run).
  ///
  /// On the loop's own thread the answer comes from a thread-local cache: looking through
  /// the loop's deadline providers takes the loop's lock and copies its list, which cost
  /// about 7% of adding a timer.
  static func of(_ loop: EventRunLoop) -> _TimerScheduler? {
    // A loop's scheduler never changes, and ids are unique: a cached scheduler of this
    // loop's id is this loop's.
    if let cached = cachedForCurrentThread(), cached.loopID == loop.id { return cached }
    let scheduler = schedulersCreated.withLock { created -> _TimerScheduler? in
      if let scheduler = existing(of: loop) { return scheduler }
      guard !loop.threadHasExited else { return nil }
      let scheduler = _TimerScheduler(loop: loop)
      let plug = _TimerSchedulerPlug(scheduler)
      loop.addDeadlineSource(plug)
      // The thread may have exited between the check and the add; its exit either removed
      // the plug already or happens after this check.
      if loop.threadHasExited {
        loop.removeDeadlineSource(plug)
        scheduler.shutDown()
        return nil
      }
      created += 1
      return scheduler
    }
    if let scheduler, loop.isCurrent { scheduler.cacheForCurrentThread() }
    return scheduler
  }

  /// The scheduler of the calling thread's loop, if the thread has cached it.
  static func cachedForCurrentThread() -> _TimerScheduler? {
    guard let pointer = pthread_getspecific(schedulerCacheKey) else { return nil }
    return Unmanaged<_TimerScheduler>.fromOpaque(pointer).takeUnretainedValue()
  }

  /// Caches this scheduler as the calling thread's (call on the loop's thread only). The
  /// cache owns one retain, given back when the thread exits.
  private func cacheForCurrentThread() {
    guard pthread_getspecific(schedulerCacheKey) == nil else { return }
    pthread_setspecific(schedulerCacheKey, Unmanaged.passRetained(self).toOpaque())
  }

  /// Wakes the loop when a change made off its thread moved a deadline earlier.
  func wakeIfNeeded(_ earlier: Bool) {
    // On the loop's thread (known without loading the weak reference when the thread has
    // cached its scheduler), the loop asks again before it next sleeps.
    guard earlier,
      pthread_getspecific(schedulerCacheKey) != Unmanaged.passUnretained(self).toOpaque(),
      let loop, !loop.isCurrent
    else { return }
    loop.wakeUp()
  }

  func hasItems(in mode: LoopMode, common: Bool) -> Bool {
    state.withLock { state in
      state.count(in: mode) > 0 || (common && state.count(in: .common) > 0)
        || state.firingKeepsModeAlive(mode, common: common)
    }
  }

  func nextDeadline(in mode: LoopMode, common: Bool) -> Int64? {
    let key = state.withLock { state -> Int64? in
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
      var wake = state.latestFireKey(in: mode, atMost: limit)
      if common, let shared = state.latestFireKey(in: .common, atMost: limit) {
        wake = wake.map { max($0, shared) } ?? shared
      }
      return wake ?? limit
    }
    return key.map(_TimerClock.deadline(ofKey:))
  }

  func fireDue(in mode: LoopMode, of loop: EventRunLoop, common: Bool, now: Int64) {
    // Timers (re)scheduled from here on, by the call-outs below or by other threads, wait
    // for the next pass, as the guide says of a timer that comes due during a handler.
    let horizon = state.withLock { $0.nextSequence }
    // Keys are loop clock readings: `now` is already one.
    while let due = state.withLock({
      $0.takeDue(in: mode, common: common, now: now, before: horizon)
    }) {
      let timer = due.timer
      // Invalidated by another thread since it was taken: a call-out not begun is not made.
      if timer.isValid {
        loop.withCallout(.timer, name: timer.name, dueAt: due.dueAt) { timer.handler(timer) }
      }
      // As CFRunLoop does: the next fire date is computed now that the call-out has
      // returned, as the first grid point later than now, so a call-out that overran its
      // period is followed by the next grid point, not by a late catch-up fire.
      let after = _TimerClock.nowKey()
      state.withLock { $0.finishFiring(timer, takenSequence: due.sequence, now: after) }
    }
  }
}

/// The loop's handle on its timer scheduler: the ``DeadlineSource`` it holds. Its end,
/// when the loop lets go of it as its thread exits, shuts the scheduler down (timers hold
/// the scheduler itself, so the scheduler's own end would come only after theirs).
final class _TimerSchedulerPlug: DeadlineSource, Sendable {
  let scheduler: _TimerScheduler

  init(_ scheduler: _TimerScheduler) {
    self.scheduler = scheduler
  }

  deinit {
    scheduler.shutDown()
  }

  func hasItems(in mode: LoopMode, isCommon: Bool) -> Bool {
    scheduler.hasItems(in: mode, common: isCommon)
  }

  func nextDeadline(in mode: LoopMode, isCommon: Bool) -> Int64? {
    scheduler.nextDeadline(in: mode, common: isCommon)
  }

  func fireDue(in mode: LoopMode, isCommon: Bool, now: Int64, on loop: EventRunLoop) {
    scheduler.fireDue(in: mode, of: loop, common: isCommon, now: now)
  }
}

// The thread-local slot caching the scheduler of each thread's loop (one retain, given back
// when the thread exits).
private let schedulerCacheKey: pthread_key_t = {
  var key = pthread_key_t()
  let status = pthread_key_create(&key) { pointer in
    guard let pointer else { return }
    Unmanaged<_TimerScheduler>.fromOpaque(pointer).release()
  }
  precondition(status == 0, "pthread_key_create failed: \(status)")
  return key
}()

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
  /// Whether the loop's thread has exited (the heaps are then empty for good).
  var exited = false
  /// The timers whose call-outs are running, innermost last (out of the heaps meanwhile).
  var firing: [LoopTimer] = []

  func count(in mode: LoopMode) -> Int {
    guard let index = index(of: mode) else { return 0 }
    return heaps[index].count
  }

  /// The position of `mode`'s heaps. The first few keys are compared directly: a loop's
  /// timers are usually in one or two mode keys, and comparing a short mode name is cheaper
  /// than hashing it.
  func index(of mode: LoopMode) -> Int? {
    for index in 0..<min(heaps.count, 4) where heaps[index].mode == mode { return index }
    return heaps.count > 4 ? heapIndexByMode[mode] : nil
  }

  func wakeTop(in mode: LoopMode) -> Int64? {
    guard let index = index(of: mode) else { return nil }
    return heaps[index].wakeTop
  }

  func latestFireKey(in mode: LoopMode, atMost limit: Int64) -> Int64? {
    guard let index = index(of: mode) else { return nil }
    return heaps[index].latestFireKey(atMost: limit)
  }

  mutating func heapIndex(for mode: LoopMode) -> Int {
    if let index = index(of: mode) { return index }
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
    if timer.sequence == 0 { timer.sequence = takeSequence() }
    let heapIndex = heapIndex(for: mode)
    // The usual timer (first mode, no extras): straight into the inline slot.
    if timer.firstHeap == LoopTimer.noHeap, !timer.hasExtras, heapIndex < LoopTimer.noHeap {
      timer.firstHeap = UInt16(heapIndex)
      timer.firstFlags = LoopTimer.activeFlag
      return link(timer, slot: 0, heapIndex: heapIndex)
    }
    let position: Int
    if let existing = timer.slotPosition(ofHeap: heapIndex), var slot = timer.slot(at: existing) {
      guard !slot.active else { return false }
      slot.active = true
      timer.setSlot(slot, at: existing)
      position = existing
    } else {
      position = timer.appendSlot(_TimerSlot(heapIndex: heapIndex, active: true))
    }
    guard timer.suspendedRemaining == nil else { return false }
    return link(timer, slot: position, heapIndex: heapIndex)
  }

  /// Inserts `timer`'s nodes for the slot at `position`. Returns whether the heaps' earliest
  /// wake-up moved earlier.
  private mutating func link(_ timer: LoopTimer, slot position: Int, heapIndex: Int) -> Bool {
    let before = heaps[heapIndex].wakeTop
    let node = _TimerHeapNode(timer: timer, order: .wake)
    // A timer without extras has never had a tolerance: its inline slot is not tolerant.
    if position == 0, !timer.hasExtras {
      heaps[heapIndex].exact.insert(node)
      return before.map { node.date < $0 } ?? true
    }
    let tolerant = timer.scheduledTolerance > .zero
    if var slot = timer.slot(at: position), slot.tolerant != tolerant {
      slot.tolerant = tolerant
      timer.setSlot(slot, at: position)
    }
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
    guard let heapIndex = index(of: mode), let position = timer.slotPosition(ofHeap: heapIndex),
      var slot = timer.slot(at: position), slot.active
    else { return false }
    unlink(timer, slot: position)
    slot = timer.slot(at: position)!
    slot.active = false
    timer.setSlot(slot, at: position)
    return true
  }

  /// Takes `timer` out of every heap (invalidation, suspension, one-shot firing). Returns
  /// whether it was in any.
  @discardableResult
  mutating func unlinkAll(_ timer: LoopTimer) -> Bool {
    guard !exited else { return false }
    // The usual timer: one node, in the exact heap of its inline slot's mode key.
    if !timer.hasExtras {
      let fireIndex = Int(timer.firstFireIndex)
      guard timer.firstHeap != LoopTimer.noHeap, fireIndex >= 0 else { return false }
      heaps[Int(timer.firstHeap)].exact.remove(at: fireIndex)
      return true
    }
    var unlinked = false
    for position in 0..<timer.slotEnd where unlink(timer, slot: position) { unlinked = true }
    return unlinked
  }

  /// Takes the nodes of `timer`'s slot at `position` out of their heaps; returns whether it
  /// had any.
  @discardableResult
  private mutating func unlink(_ timer: LoopTimer, slot position: Int) -> Bool {
    guard let slot = timer.slot(at: position) else { return false }
    var unlinked = false
    if slot.fireIndex >= 0 {
      if slot.tolerant {
        heaps[slot.heapIndex].fire.remove(at: slot.fireIndex)
      } else {
        heaps[slot.heapIndex].exact.remove(at: slot.fireIndex)
      }
      unlinked = true
    }
    // Read again: the removal above may not move this timer's wake node, but reading the
    // slot afresh keeps that reasoning out of here.
    if let wakeIndex = timer.slot(at: position)?.wakeIndex, wakeIndex >= 0 {
      heaps[slot.heapIndex].wake.remove(at: wakeIndex)
      unlinked = true
    }
    return unlinked
  }

  /// Puts a suspended timer back in the heaps of its active modes. Returns whether a wake-up
  /// deadline moved earlier.
  mutating func relink(_ timer: LoopTimer) -> Bool {
    var earlier = false
    for position in 0..<timer.slotEnd {
      guard let slot = timer.slot(at: position), slot.active, slot.fireIndex < 0 else {
        continue
      }
      if link(timer, slot: position, heapIndex: slot.heapIndex) { earlier = true }
    }
    return earlier
  }

  /// Sets the fire date and tolerance of a scheduled timer and moves it in every heap.
  /// Returns whether a wake-up deadline of some mode moved earlier.
  mutating func reschedule(
    _ timer: LoopTimer, fireDate: ContinuousClock.Instant, tolerance: Duration
  ) -> Bool {
    let dateChanged = fireDate != timer.scheduledFireDate
    // The linked slots, and each one's heaps' earliest wake-up before the change.
    var linked: [(position: Int, heapIndex: Int, before: Int64?)] = []
    for position in 0..<timer.slotEnd {
      guard let slot = timer.slot(at: position), slot.fireIndex >= 0 else { continue }
      linked.append((position, slot.heapIndex, heaps[slot.heapIndex].wakeTop))
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
      for slot in linked { _ = link(timer, slot: slot.position, heapIndex: slot.heapIndex) }
    } else {
      reposition(timer)
    }
    return linked.contains { slot in
      guard let after = heaps[slot.heapIndex].wakeTop else { return false }
      return slot.before.map { after < $0 } ?? true
    }
  }

  /// Moves `timer`'s nodes after its key changed. Allocates nothing.
  private mutating func reposition(_ timer: LoopTimer) {
    // The usual timer: one mode key, no tolerance, no extras.
    if timer.firstHeap != LoopTimer.noHeap, !timer.hasExtras {
      let fireIndex = Int(timer.firstFireIndex)
      if fireIndex >= 0 { heaps[Int(timer.firstHeap)].exact.restore(at: fireIndex) }
      return
    }
    for position in 0..<timer.slotEnd {
      guard let slot = timer.slot(at: position) else { continue }
      if slot.fireIndex >= 0 {
        if slot.tolerant {
          heaps[slot.heapIndex].fire.restore(at: slot.fireIndex)
        } else {
          heaps[slot.heapIndex].exact.restore(at: slot.fireIndex)
        }
      }
      if let wakeIndex = timer.slot(at: position)?.wakeIndex, wakeIndex >= 0 {
        heaps[slot.heapIndex].wake.restore(at: wakeIndex)
      }
    }
  }

  /// The next timer to fire in `mode` at `now` (a key), with the fire date it was due at
  /// and its sequence then; `nil` when none is due. Only timers scheduled before sequence
  /// `horizon` qualify; one (re)scheduled since, even into the past, neither qualifies nor
  /// holds back the others.
  ///
  /// The timer is taken out of its heaps and marked firing until ``finishFiring(_:takenSequence:now:)``:
  /// while its call-out runs, no nested run fires it again or wakes for it (CFRunLoop skips a
  /// firing timer), yet it still keeps its modes from being empty. Allocates nothing once
  /// `firing` has grown to the deepest nesting of timer call-outs.
  mutating func takeDue(
    in mode: LoopMode, common: Bool, now: Int64, before horizon: UInt64
  ) -> (timer: LoopTimer, dueAt: ContinuousClock.Instant, sequence: UInt64)? {
    while true {
      var best: (node: _TimerHeapNode, key: (Int64, UInt64))?
      if let index = index(of: mode) {
        best = heaps[index].firstDue(now: now, before: horizon)
      }
      if common, let index = index(of: .common),
        let shared = heaps[index].firstDue(now: now, before: horizon),
        best.map({ shared.key < $0.key }) ?? true
      {
        best = shared
      }
      guard let node = best?.node else { return nil }
      let timer = node.timer
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
  /// still valid and not suspended goes back into its heaps: at the fire date its call-out
  /// set, if it set one, else at the first grid point later than `now`.
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
    func isActive(_ timer: LoopTimer, in heapIndex: Int?) -> Bool {
      guard let heapIndex, let position = timer.slotPosition(ofHeap: heapIndex) else {
        return false
      }
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
      from: timer.scheduledFireDate, after: _TimerClock.instant(atKey: now), interval: interval)
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

  /// The earliest end of a tolerance window, as a key.
  var wakeTop: Int64? {
    switch (exact.top?.date, wake.top?.date) {
    case (let first?, let second?): return min(first, second)
    case (let first, let second): return first ?? second
    }
  }

  /// The latest fire date that is at most `limit` (see ``_TimerHeap/latestFireKey(atMost:)``).
  func latestFireKey(atMost limit: Int64) -> Int64? {
    switch (exact.latestFireKey(atMost: limit), fire.latestFireKey(atMost: limit)) {
    case (let first?, let second?): return max(first, second)
    case (let first, let second): return first ?? second
    }
  }

  /// The first due node in fire order of both fire-order heaps (see
  /// ``_TimerHeap/firstDue(now:before:)``).
  func firstDue(now: Int64, before horizon: UInt64)
    -> (node: _TimerHeapNode, key: (Int64, UInt64))?
  {
    let first = exact.firstDue(now: now, before: horizon)
    guard let second = fire.firstDue(now: now, before: horizon) else { return first }
    guard let first else { return second }
    return second.key < first.key ? second : first
  }
}
