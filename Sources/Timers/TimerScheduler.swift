import Glibc
import RunLoopCore

/// The timers of one run loop. The loop sees it through a `TimerSchedulerPlug`, its
/// ``DeadlineSource`` for timers, plugged in the first time a timer is added to the loop.
/// What it keeps is in `SchedulerState`: a `TimerQueue` per set of modes, each a
/// `TimerHeap` with the rule for tolerance.
///
/// Ownership: the loop holds the plug, the plug holds the scheduler, the scheduler holds its
/// linked timers, and a timer holds the scheduler it joined (strongly: nothing refers to the
/// scheduler weakly, so it has no side table and its reference counting stays on the fast
/// path). When the loop's thread exits, the loop lets go of the plug, whose end shuts the
/// scheduler down: every timer still linked is invalidated and released, which breaks the
/// cycles; the scheduler itself goes with the last timer that joined it.
///
/// Locking: all state is behind `state` (the scheduler's `GuardedState`), taken once per
/// operation, also on the loop's own thread. Timers are added, invalidated, rescheduled and
/// suspended from any thread, and what those calls report (a timer's `isValid`,
/// `fireDate`, whether a run in an emptied mode returns) must hold as soon as they return;
/// an uncontended lock costs about 20 ns here, a small share of a timer's cost. Call-outs
/// run with no lock held.
final class TimerScheduler: @unchecked Sendable {
  // Guarded by its own lock.
  let state = GuardedState(SchedulerState())
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
    var (queues, delayed) = state.withLock {
      state -> ([TimerQueue], [String: [LoopTimer]]) in
      state.exited = true
      for queue in state.queues {
        for node in queue.heap.nodes { _ = node.timer.takeUnretainedValue().markInvalid() }
      }
      defer {
        state.queues = []
        state.delayedByKey = [:]
      }
      return (state.queues, state.delayedByKey)
    }
    // Outside the lock: this may free timers and what their handlers captured.
    for index in queues.indices { queues[index].releaseAll() }
    for timer in delayed.values.joined() { _ = timer.markInvalid() }
    delayed = [:]
  }

  /// The scheduler of `loop` if it has one (it never gets one once its thread has exited).
  static func existing(of loop: EventRunLoop) -> TimerScheduler? {
    if let cached = cachedForCurrentThread(), cached.loopID == loop.id { return cached }
    for source in loop.deadlineSources {
      if let plug = source as? TimerSchedulerPlug { return plug.scheduler }
    }
    return nil
  }

  /// The scheduler of `loop`, created and plugged in on first use; `nil` when `loop`'s thread
  /// has exited (a scheduler plugged into such a loop would never run).
  ///
  /// On the loop's own thread the answer comes from a thread-local cache: looking through
  /// the loop's deadline providers takes the loop's lock and copies its list, which cost
  /// about 7% of adding a timer.
  static func of(_ loop: EventRunLoop) -> TimerScheduler? {
    // A loop's scheduler never changes, and ids are unique: a cached scheduler of this
    // loop's id is this loop's.
    if let cached = cachedForCurrentThread(), cached.loopID == loop.id { return cached }
    let scheduler = schedulersCreated.withLock { created -> TimerScheduler? in
      if let scheduler = existing(of: loop) { return scheduler }
      guard !loop.threadHasExited else { return nil }
      let scheduler = TimerScheduler(loop: loop)
      let plug = TimerSchedulerPlug(scheduler)
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
  static func cachedForCurrentThread() -> TimerScheduler? {
    guard let pointer = pthread_getspecific(schedulerCacheKey) else { return nil }
    return Unmanaged<TimerScheduler>.fromOpaque(pointer).takeUnretainedValue()
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

  func hasItems(in mode: ActiveMode) -> Bool {
    state.withLock { state in
      state.queues.contains { $0.count > 0 && $0.serves(mode) }
        || state.firingKeepsModeAlive(mode)
    }
  }

  func nextDeadline(in mode: ActiveMode) -> Int64? {
    state.withLock { $0.wakeKey(in: mode) }.map(TimerClock.deadline(ofKey:))
  }

  func fireDue(in mode: ActiveMode, of loop: EventRunLoop, now: Int64) {
    // Timers (re)scheduled from here on, by the call-outs below or by other threads, wait
    // for the next pass, as the guide says of a timer that comes due during a handler.
    let horizon = state.withLock { $0.nextSequence }
    // Keys are loop clock readings: `now` is already one.
    while let due = state.withLock({
      $0.takeDue(in: mode, now: now, before: horizon)
    }) {
      let timer = due.timer
      // Invalidated by another thread since it was taken: a call-out not begun is not made.
      if timer.isValid {
        loop.withCallout(
          .timer, name: timer.name, dueAt: due.dueAt, cause: due.origin?.cause,
          contexts: due.origin?.contexts
        ) {
          timer.handler(timer)
        }
      }
      // As CFRunLoop does: the next fire date is computed now that the call-out has
      // returned, as the first grid point later than now, so a call-out that overran its
      // period is followed by the next grid point, not by a late catch-up fire.
      // A one-shot timer is done: only a repeating one needs the clock again.
      let after = due.repeats ? TimerClock.nowKey() : now
      state.withLock { $0.finishFiring(timer, takenSequence: due.sequence, now: after) }
    }
  }
}

/// The loop's handle on its timer scheduler: the ``DeadlineSource`` it holds. Its end,
/// when the loop lets go of it as its thread exits, shuts the scheduler down (timers hold
/// the scheduler itself, so the scheduler's own end would come only after theirs).
final class TimerSchedulerPlug: DeadlineSource, Sendable {
  let scheduler: TimerScheduler

  init(_ scheduler: TimerScheduler) {
    self.scheduler = scheduler
  }

  deinit {
    scheduler.shutDown()
  }

  func hasItems(in mode: ActiveMode) -> Bool {
    scheduler.hasItems(in: mode)
  }

  func nextDeadline(in mode: ActiveMode) -> Int64? {
    scheduler.nextDeadline(in: mode)
  }

  func fireDue(in mode: ActiveMode, now: Int64, on loop: EventRunLoop) {
    scheduler.fireDue(in: mode, of: loop, now: now)
  }
}

// The thread-local slot caching the scheduler of each thread's loop (one retain, given back
// when the thread exits).
private let schedulerCacheKey: pthread_key_t = {
  var key = pthread_key_t()
  let status = pthread_key_create(&key) { pointer in
    guard let pointer else { return }
    Unmanaged<TimerScheduler>.fromOpaque(pointer).release()
  }
  precondition(status == 0, "pthread_key_create failed: \(status)")
  return key
}()

// Serialises "find or create" of a loop's scheduler, and counts the schedulers created. (A
// `GuardedState<Void>` would do, but ThreadSanitizer misreports accesses to a zero-sized
// guarded value as races.)
private let schedulersCreated = GuardedState(0)
