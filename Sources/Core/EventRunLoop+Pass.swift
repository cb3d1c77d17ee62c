/// The passes of one run, following the guide's "The Run Loop Sequence of Events". Steps 1
/// and 10 (entry and exit) are in `runSpecific`; each loop of `runPasses` is steps 2 to 9,
/// one call per step, with the bookkeeping before them in `beginPass`. From the moment the
/// loop has its events (step 5 or 7) until its next pass begins, it ignores wake-ups
/// (`local.ignoringWakeUps`, see ``startCountingWakeUps(_:)``), as CFRunLoop does.
///
/// Everything here runs on the loop's thread. What a step reads from the shared state comes
/// from `self[passIn: mode]` (a ``PassSnapshot`` that is current whenever it is read: a
/// call-out between two steps may have changed anything).
extension EventRunLoop {
  func runPasses(_ active: inout ActiveMode, depth: Int, plan: RunPlan) -> RunResult {
    assertOnLoopThread()
    let buffer = poller.buffer(depth: depth)
    while true {
      beginPass(&active)
      notify(.beforeTimers)  // Step 2
      notify(.beforeSources)  // Step 3
      runBlocksAndJobs(active)
      // Step 4
      var sourceHandled = fireCustomSources(active, onlyFirst: plan.returnAfterSourceHandled)
      if sourceHandled { runBlocksAndJobs(active) }
      // A pass that handled a source, or a zero-timeout run, does not block: it takes the
      // events that are there, and tells observers about no sleep.
      let mayBlock = !sourceHandled && !plan.neverBlocks
      let eventCount: Int
      if mayBlock, let ready = handleReadyPort(active, into: buffer) {  // Step 5
        eventCount = ready
        startIgnoringWakeUps()
      } else {
        if mayBlock { notify(.beforeWaiting) }  // Step 6
        // Step 7
        eventCount =
          mayBlock
          ? sleep(active, plan: plan, buffer: buffer) : pollEvents(in: active, into: buffer)
        startIgnoringWakeUps()
        if mayBlock { notify(.afterWaiting) }  // Step 8
      }
      // Step 9
      let skipPorts = sourceHandled && plan.returnAfterSourceHandled
      if handleEvents(eventCount, in: buffer, active: active, plan: plan, skipPorts: skipPorts) {
        sourceHandled = true
      }
      runBlocksAndJobs(active)
      if let result = exitReason(active, plan: plan, sourceHandled: sourceHandled) {
        return result
      }
    }
  }

  /// The bookkeeping before step 2: counts the pass, makes wake-ups count again if the loop
  /// woke since the last pass began, makes the mode again if it joined the common modes
  /// since the last pass, and puts back the watches held out of the `epoll` set for this
  /// mode.
  // Always inlined: it is apart from the pass for reading only, and every pass runs it.
  @inline(__always)
  private func beginPass(_ active: inout ActiveMode) {
    local.iteration &+= 1
    if local.ignoringWakeUps { startCountingWakeUps(active) }
    // The checks here, not in the callees: the usual pass pays a load and a branch for
    // each, not a call.
    if self[passIn: active.mode].asksMoreOfAPass(in: active) { setUpPass(&active) }
    if local.mainQueueDrains > 0 { holdMainQueueWatchWhileDraining() }
  }

  /// The rest of ``beginPass(_:)``, for a pass that needs it.
  private func setUpPass(_ active: inout ActiveMode) {
    active.isCommon = self[passIn: active.mode].isCommon
    if self[passIn: active.mode].hasHeldWatches { restoreHeldWatches(active) }
  }

  /// Blocks and jobs: the perform requests queued for `active` before this call, in FIFO
  /// order, then the Swift concurrency jobs queued for it (steps 3, 4 and 9). Each takes the
  /// lock only when something is queued.
  private func runBlocksAndJobs(_ active: ActiveMode) {
    runPerformRequests(active)
    runJobs(active)
  }

  /// From here a wake-up counts (CFRunLoop's "unset ignore wake-ups", at the start of a
  /// run and of each pass after the loop woke). A wake-up noted since the loop woke, or
  /// while no run was active, is dropped, as CFRunLoop drops it: this pass looks at
  /// everything it can announce before it sleeps, except a stop or an emptied mode, which
  /// only the end of a pass checks. For those the loop notes a wake-up of its own, so that
  /// the coming sleep does not block.
  func startCountingWakeUps(_ active: ActiveMode) {
    local.ignoringWakeUps = false
    if local.keepsNote {
      local.keepsNote = false
    } else if waker.takeNote() {
      dropWakeUp(active)
    }
  }

  /// The rest of ``startCountingWakeUps(_:)``, for a pass that dropped a wake-up.
  private func dropWakeUp(_ active: ActiveMode) {
    local.wakeUpsTaken &+= 1
    if runs.stopIsPending || modeIsEmpty(active) { waker.wake() }
  }

  /// The loop has its events (step 5 or 7), or a run that counted wake-ups ends where they
  /// are ignored: until the next pass or run begins, a wake-up is dropped. A note already
  /// there was made while wake-ups counted, and is kept: it ends the next sleep, as a write
  /// to CFRunLoop's wake-up port does.
  func startIgnoringWakeUps() {
    local.ignoringWakeUps = true
    local.keepsNote = waker.hasNote
  }

  /// Why the run should end now, in CFRunLoop's order of checks, or `nil` to go on. The
  /// first two need nothing but the plan; the others, which read the clock and the loop's
  /// state, are in a function of their own, so that a zero-timeout run's pass does not pay
  /// for setting them up.
  private func exitReason(_ active: ActiveMode, plan: RunPlan, sourceHandled: Bool)
    -> RunResult?
  {
    if sourceHandled && plan.returnAfterSourceHandled { return .handledSource }
    if plan.neverBlocks { return .timedOut }
    return exitReasonAfterTheSleep(active, plan: plan)
  }

  /// The rest of ``exitReason(_:plan:sourceHandled:)``'s checks.
  private func exitReasonAfterTheSleep(_ active: ActiveMode, plan: RunPlan) -> RunResult? {
    if let deadline = plan.deadline, LoopClock.now() >= deadline { return .timedOut }
    if runs.takeStopRequest() { return .stopped }
    if modeIsEmpty(active) { return .finished }
    return nil
  }

  /// Puts the held watches of `active` back into the `epoll` set (a pass calls it only when
  /// its snapshot says some watch is held: the check is in the caller, so that the usual
  /// pass pays a load and a branch for it, not a call).
  private func restoreHeldWatches(_ active: ActiveMode) {
    let draining = local.mainQueueDrains > 0
    state.withLock { state in
      for token in state.heldTokens {
        guard let watch = state.watchesByToken[token],
          Self.watch(watch, runsIn: active, table: state.watches),
          !(draining && token == state.mainQueueWatchToken)
        else { continue }
        state.heldTokens.remove(token)
        try? poller.add(watch.fileDescriptor, mask: watch.interest.epollMask, token: token)
      }
    }
  }

  /// Whether `watch` is scheduled in `active`, directly or through the common modes.
  private static func watch(
    _ watch: DescriptorWatch, runsIn active: ActiveMode, table: LoopModeTable<DescriptorWatch>
  ) -> Bool {
    table.contains(watch, in: active.mode)
      || (active.isCommon && table.contains(watch, in: .common))
  }

  /// Step 4: performs the custom sources of `active` that are signalled now, in ascending
  /// order, equal orders in the order they were first signalled (CFRunLoop's rule); with
  /// `onlyFirst`, only the first. A source signalled by one of these call-outs waits for the
  /// next pass, as in CFRunLoop, which collects the signalled sources before calling any.
  /// Returns whether any ran.
  private func fireCustomSources(_ active: ActiveMode, onlyFirst: Bool) -> Bool {
    local.step = 4
    // Most passes find no source signalled: the loop's inbox of signalled sources tells
    // without a lock (see `EventRunLoop+SignalledSources.swift`).
    guard mayHaveSignalledSources(active) else { return false }
    return performSignalledSources(active, onlyFirst: onlyFirst)
  }

  /// Step 5: checks without blocking whether a version-1 source is ready (only when the
  /// mode watches a descriptor). Returns the number of events in `buffer` when one is, for
  /// step 9; when none is, the events stay pending for the sleep (descriptors are
  /// level-triggered). A wake-up noted earlier in the pass is then dropped when the next
  /// pass begins: what it announced is looked at after step 9 anyway.
  private func handleReadyPort(_ active: ActiveMode, into buffer: UnsafeMutableRawPointer)
    -> Int?
  {
    local.step = 5
    guard self[passIn: active.mode].hasWatches else { return nil }
    let count = poller.wait(into: buffer, block: false)
    for index in 0..<count where poller.event(index, in: buffer).token > Poller.timerToken {
      return count
    }
    return nil
  }

  /// Step 7 in a pass that does not sleep (it handled a source, or its run never blocks):
  /// the events there are, taken without blocking. As CFRunLoop's non-blocking look does, it
  /// takes a wake-up made during the pass, so the next pass sleeps: what a wake-up announces
  /// is looked at later anyway (a request or job by step 9 and the next pass, a signal by
  /// the next step 4, a stop or an emptied mode by the end of the pass).
  private func pollEvents(in active: ActiveMode, into buffer: UnsafeMutableRawPointer) -> Int {
    local.step = 7
    if waker.takeNote() { local.wakeUpsTaken &+= 1 }
    return readyEvents(in: active, into: buffer)
  }

  /// The events there are, without blocking. A mode that watches no descriptor has nothing
  /// `epoll` could report that a pass which does not sleep needs: a wake-up announces what
  /// the pass looks at directly (requests, signals, a stop), and due timers are fired from
  /// the clock, not from the `timerfd`. So the pass makes no system call.
  private func readyEvents(in active: ActiveMode, into buffer: UnsafeMutableRawPointer) -> Int {
    guard self[passIn: active.mode].hasWatches else { return 0 }
    return poller.wait(into: buffer, block: false)
  }

  /// Step 7: sleeps until the earliest of the run's deadline and the deadline sources'
  /// deadlines, an event, or a wake-up. Returns the number of events. A wake-up noted during
  /// the pass means there is no sleep: the pass takes the events there are (see
  /// `readyEvents(in:into:)`), and neither the deadline nor the timerfd is looked at.
  private func sleep(_ active: ActiveMode, plan: RunPlan, buffer: UnsafeMutableRawPointer) -> Int {
    local.step = 7
    if waker.takeNote() {
      local.wakeUpsTaken &+= 1
      return readyEvents(in: active, into: buffer)
    }
    let deadline = wakeDeadline(in: active, runDeadline: plan.deadline)
    // With no descriptor to watch and no deadline, only a wake-up can end this sleep: the
    // loop sleeps on its word (see `Waker`), and the timerfd keeps whatever it was armed
    // for (an old expiry is drained when `epoll` reports it).
    let onSleepWord = deadline == nil && !self[passIn: active.mode].hasWatches
    if !onSleepWord { poller.arm(nanoseconds: deadline) }
    guard refreshInstruments().contains(.sleeps) else {
      return blockingWait(into: buffer, onSleepWord: onSleepWord)
    }
    let start = LoopClock.now()
    let count = blockingWait(into: buffer, onSleepWord: onSleepWord)
    reportSleep(from: start, to: LoopClock.now())
    return count
  }

  /// The earliest of `runDeadline` and the deadline sources' next deadlines in `active`.
  private func wakeDeadline(in active: ActiveMode, runDeadline: Int64?) -> Int64? {
    guard !self[passIn: active.mode].deadlineSources.isEmpty else { return runDeadline }
    var wake = runDeadline
    for source in self[passIn: active.mode].deadlineSources {
      guard let due = source.nextDeadline(in: active) else { continue }
      if wake.map({ due < $0 }) ?? true { wake = due }
    }
    return wake
  }

  /// Step 9: handles wake-ups, timers and ready descriptors. Returns whether a source was
  /// handled (descriptors count; timers and wake-ups never do). A pass that took no event
  /// and has no deadline source to look at has nothing to process: the check is here, in
  /// a function the pass inlines, so that such a pass makes no call.
  private func handleEvents(
    _ count: Int, in buffer: UnsafeMutableRawPointer, active: ActiveMode, plan: RunPlan,
    skipPorts: Bool
  ) -> Bool {
    local.step = 9
    guard count > 0 || !self[passIn: active.mode].deadlineSources.isEmpty else { return false }
    return handleEventsAndDeadlines(
      count, in: buffer, active: active, plan: plan, skipPorts: skipPorts)
  }

  private func handleEventsAndDeadlines(
    _ count: Int, in buffer: UnsafeMutableRawPointer, active: ActiveMode, plan: RunPlan,
    skipPorts: Bool
  ) -> Bool {
    var handled = false
    var chosen: (watch: DescriptorWatch, mask: UInt32)?
    // A call-out that runs the loop nested may consume readiness this buffer still reports;
    // once that happened, the rest of the buffer's descriptor events are stale. Level-
    // triggered epoll reports again, in the next pass, whatever is really still ready.
    let runsBefore = local.runsStarted
    for index in 0..<count {
      let (token, mask) = poller.event(index, in: buffer)
      switch token {
      case Poller.wakeToken:
        // Nothing to read (the eventfd is edge-triggered), and the waker's state already
        // told the wait's end that it was woken.
        break
      case Poller.timerToken:
        poller.drainTimer()
      default:
        guard !skipPorts, local.runsStarted == runsBefore,
          let watch = runnableWatch(token: token, active: active)
        else { continue }
        if plan.returnAfterSourceHandled {
          // Only one source per run: keep the one that goes first; the others stay ready.
          if chosen.map({ goesFirst(watch, before: $0.watch) }) ?? true {
            chosen = (watch, mask)
          }
        } else {
          callOut(watch, mask: mask)
          handled = true
        }
      }
    }
    // The check in the caller, as for held watches: most loops have no deadline sources.
    if !self[passIn: active.mode].deadlineSources.isEmpty { fireDueDeadlines(active) }
    if let chosen, local.runsStarted == runsBefore {
      local.lastChosenWatchToken = chosen.watch.token
      callOut(chosen.watch, mask: chosen.mask)
      handled = true
    }
    return handled
  }

  /// Whether `watch` goes before `other` in a run that handles one source: the lower order
  /// first; equal orders take turns, the first token after the last one chosen going first.
  /// `epoll` reports level-triggered descriptors in the same order pass after pass, so
  /// without turns one that stays ready (a port its senders keep full) would be chosen by
  /// every run and starve the others (a signal waited more than 10 s in the soak test).
  private func goesFirst(_ watch: DescriptorWatch, before other: DescriptorWatch) -> Bool {
    guard watch.order == other.order else { return watch.order < other.order }
    let last = local.lastChosenWatchToken
    return (watch.token <= last ? 1 : 0, watch.token) < (other.token <= last ? 1 : 0, other.token)
  }

  private func callOut(_ watch: DescriptorWatch, mask: UInt32) {
    // Invalidated by an earlier call-out of this pass (or by another thread just now).
    guard watch.isValid else { return }
    let events = DescriptorEvents(epollMask: mask)
    // A watch without a kind makes its own call-outs, one per message it hands over.
    guard let kind = watch.calloutKind else { return watch.handler(events) }
    callOut(kind, name: watch.name) { watch.handler(events) }
  }

  /// The watch for `token` if it runs in `active`; a watch of another mode is held: taken out of
  /// the `epoll` set (switching its interest off is not enough: `epoll` always reports errors
  /// and hang-ups) so that it does not wake the loop again until its mode runs.
  private func runnableWatch(token: UInt64, active: ActiveMode) -> DescriptorWatch? {
    state.withLock { state -> DescriptorWatch? in
      guard let watch = state.watchesByToken[token] else { return nil }
      if Self.watch(watch, runsIn: active, table: state.watches) { return watch }
      state.heldTokens.insert(token)
      poller.remove(watch.fileDescriptor)
      return nil
    }
  }

  /// Tells each deadline source to fire what is due in `active`. The sources decide what is
  /// due (a timer with tolerance may fire early in its window when the loop is awake anyway).
  private func fireDueDeadlines(_ active: ActiveMode) {
    let now = LoopClock.now()
    for source in self[passIn: active.mode].deadlineSources {
      source.fireDue(in: active, now: now, on: self)
    }
  }
}
