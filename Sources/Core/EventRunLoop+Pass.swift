/// The passes of one run, following the guide's "The Run Loop Sequence of Events". Steps 1
/// and 10 (entry and exit) are in `runSpecific`; each loop of `runPasses` is steps 2 to 9.
extension EventRunLoop {
  func runPasses(mode: LoopMode, depth: Int, plan: RunPlan) -> RunResult {
    let buffer = poller.buffer(depth: depth)
    while true {
      local.iteration &+= 1
      refreshPassCache(for: mode)
      let hasPortSources = prepareHeldDescriptors(mode: mode)

      // Step 2: notify observers that ready timers are about to fire.
      notify(.beforeTimers)
      // Step 3: notify observers that custom sources are about to fire.
      notify(.beforeSources)
      runPerformRequests(mode: mode)
      // Step 4: fire ready custom (version 0) sources.
      var sourceHandled = fireCustomSources(mode: mode, onlyFirst: plan.returnAfterSourceHandled)
      if sourceHandled { runPerformRequests(mode: mode) }

      // A pass that handled a source, or a zero-timeout run, checks for events without
      // sleeping and without telling observers about a sleep.
      let poll = sourceHandled || plan.pollOnly
      var eventCount = 0
      // Step 5: a ready port-based source is handled at once, skipping the sleep.
      var woken = false
      if !poll, hasPortSources, let ready = readyPortEvents(into: buffer, woken: &woken) {
        eventCount = ready
      } else {
        // Step 6: notify observers that the thread is about to sleep.
        if !poll { notify(.beforeWaiting) }
        // Step 7: sleep until a descriptor, a timer, the timeout or a wake-up (one that step 5
        // already took makes the sleep a poll).
        eventCount = sleep(mode: mode, plan: plan, poll: poll || woken, buffer: buffer)
        // Step 8: notify observers that the thread woke.
        if !poll { notify(.afterWaiting) }
      }

      // Step 9: process what woke the loop, then go back to step 2 unless the run is over.
      let skipPorts = sourceHandled && plan.returnAfterSourceHandled
      if handleEvents(eventCount, in: buffer, mode: mode, plan: plan, skipPorts: skipPorts) {
        sourceHandled = true
      }
      runPerformRequests(mode: mode)

      if let result = exitReason(mode: mode, depth: depth, plan: plan, sourceHandled: sourceHandled)
      {
        return result
      }
    }
  }

  /// Why the run should end now, in CFRunLoop's order of checks, or `nil` to go on.
  private func exitReason(mode: LoopMode, depth: Int, plan: RunPlan, sourceHandled: Bool)
    -> RunResult?
  {
    if sourceHandled && plan.returnAfterSourceHandled { return .handledSource }
    if plan.pollOnly { return .timedOut }
    if let deadline = plan.deadlineNanoseconds, ClockReference.nowNanoseconds() >= deadline {
      return .timedOut
    }
    let stopped =
      published.stopPending.load(ordering: .sequentiallyConsistent)
      && state.withLock { state -> Bool in
        guard state.frames.count >= depth, state.frames[depth - 1].stopRequested else {
          return false
        }
        state.frames[depth - 1].stopRequested = false
        return true
      }
    if stopped { return .stopped }
    if modeIsEmpty(mode) { return .finished }
    return nil
  }

  /// Brings the loop thread's snapshot of what a pass in `mode` reads up to date. Takes the
  /// lock only when the mode differs from the snapshot's or something changed since it was
  /// taken; otherwise this is one atomic load and a comparison of mode names, inlined (a pass
  /// calls it half a dozen times, and the call cost more than the check). Call it before each
  /// use of `local.passCache`: a call-out may have run a nested run in another mode in
  /// between.
  @inline(__always)
  func refreshPassCache(for mode: LoopMode) {
    let structure = published.structure.load(ordering: .sequentiallyConsistent)
    if structure == local.passCache.structure, local.passCache.mode == mode { return }
    rebuildPassCache(for: mode)
  }

  @inline(never)
  private func rebuildPassCache(for mode: LoopMode) {
    local.passCache = state.withLock { state -> PassCache in
      let common = state.commonModes
      let sources = state.sources.resolved(for: mode, commonModes: common)
      let hasWatches = !state.watches.resolved(for: mode, commonModes: common).isEmpty
      return PassCache(
        // Read after `resolved`, which refreshes the tables' own caches and so counts as a
        // change.
        structure: state.published.structure.load(ordering: .sequentiallyConsistent),
        mode: mode, isCommon: common.contains(mode), sources: sources, hasWatches: hasWatches,
        hasHeld: !state.heldTokens.isEmpty, providers: state.providers)
    }
  }

  /// Puts held descriptors of `mode` back into the `epoll` set, and tells whether `mode` has
  /// any descriptors. The usual case, nothing held, is inlined.
  @inline(__always)
  private func prepareHeldDescriptors(mode: LoopMode) -> Bool {
    guard local.passCache.hasHeld else { return local.passCache.hasWatches }
    restoreHeldDescriptors(mode: mode)
    return local.passCache.hasWatches
  }

  @inline(never)
  private func restoreHeldDescriptors(mode: LoopMode) {
    let isCommon = local.passCache.isCommon
    state.withLock { state in
      for token in state.heldTokens {
        guard let watch = state.watchesByToken[token],
          Self.watch(watch, runsIn: mode, isCommon: isCommon, table: state.watches)
        else { continue }
        state.heldTokens.remove(token)
        try? poller.add(watch.fileDescriptor, mask: watch.interest.epollMask, token: token)
      }
    }
  }

  /// Whether `watch` is scheduled in `mode`, directly or through the common modes. Reads the
  /// table without refreshing its cache (which would count as a change of structure).
  private static func watch(
    _ watch: DescriptorWatch, runsIn mode: LoopMode, isCommon: Bool,
    table: LoopModeTable<DescriptorWatch>
  ) -> Bool {
    table.contains(watch, in: mode) || (isCommon && table.contains(watch, in: .common))
  }

  /// Performs the signalled custom sources of `mode` in ascending order; with `onlyFirst`,
  /// only the first. Returns whether any ran.
  private func fireCustomSources(mode: LoopMode, onlyFirst: Bool) -> Bool {
    refreshPassCache(for: mode)
    // Most passes find no source signalled: the flags alone tell, read in place, without
    // copying the list out (a retain and a release of the list and of each source).
    // (Indexed one at a time: `contains(where:)` retained the list for the scan.)
    var index = 0
    while index < local.passCache.sources.count, !local.passCache.sources[index].hasPendingSignal {
      index += 1
    }
    guard index < local.passCache.sources.count else { return false }
    let sources = local.passCache.sources
    var handled = false
    for source in sources where source.isValid && source.consumeSignal() {
      handled = true
      if calloutInstrumentCount.load(ordering: .relaxed) > 0 {
        tracedCallOut(source)
      } else {
        source.performHandler()
      }
      if onlyFirst { break }
    }
    return handled
  }

  // Not inlined, like `callOut`'s traced path: `withCallout` with a due time makes its caller
  // fetch type metadata on every pass.
  @inline(never)
  private func tracedCallOut(_ source: CustomInputSource) {
    withCallout(.source, name: source.name, dueAt: source.signalledAt, source.performHandler)
  }

  /// Runs every perform request for `mode` queued before this call, in FIFO order.
  ///
  /// The check for an empty queue is inlined: a pass asks two or three times, and usually
  /// only one finds something.
  /// Then runs the Swift concurrency jobs queued for `mode` (see `runJobs(mode:)`).
  @inline(__always)
  func runPerformRequests(mode: LoopMode) {
    // The lock is taken only when something is queued.
    if published.performCount.load(ordering: .sequentiallyConsistent) > 0 {
      runQueuedRequests(mode: mode)
    }
    runJobs(mode: mode)
  }

  @inline(never)
  private func runQueuedRequests(mode: LoopMode) {
    refreshPassCache(for: mode)
    // Whether `mode` is common is decided once for the batch, not hashed per request.
    let isCommon = local.passCache.isCommon
    var batch = RequestList()
    var dropped = RequestList()
    state.withLock { state in
      if state.performQueue.allSatisfy({ $0.matches(mode, modeIsCommon: isCommon) }) {
        swap(&batch, &state.performQueue)
        return
      }
      var kept = RequestList()
      while let request = state.performQueue.popFirst() {
        if request.matches(mode, modeIsCommon: isCommon) {
          batch.append(request)
        } else if request.state == .pending {
          kept.append(request)
        } else {
          // A cancelled request of another mode is dropped here: kept until a run of its
          // modes, it would stay for good on a loop that never runs them, and the queue
          // would grow with every such request cancelled.
          dropped.append(request)
        }
      }
      state.performQueue = kept
    }
    dropped.removeAll()
    while let request = batch.popFirst() {
      request.runIfPending(on: self)
    }
  }

  /// Step 5: checks without blocking whether a version-1 source is ready. Returns the
  /// number of events when one is; otherwise the events stay pending for the sleep (level-
  /// triggered descriptors report again), except a wake-up: its eventfd is edge-triggered,
  /// so it is taken here, and `woken` tells the sleep not to block.
  private func readyPortEvents(into buffer: UnsafeMutableRawPointer, woken: inout Bool) -> Int? {
    let count = poller.wait(into: buffer, block: false)
    var sawWake = false
    var sawPort = false
    for index in 0..<count {
      let token = poller.event(index, in: buffer).token
      if token > Poller.timerToken { sawPort = true }
      if token == Poller.wakeToken { sawWake = true }
    }
    // Acknowledged before any call-out, even when the batch goes on to step 9 (see
    // `acknowledgeWake(in:count:)`).
    if sawWake { wakeWasSeen() }
    if sawPort { return count }
    woken = sawWake
    return nil
  }

  /// Clears the wake flag if the batch just taken from `epoll` holds the wake-up's event.
  /// Done at once, before any call-out: the eventfd is edge-triggered, so that event is
  /// reported once, and a call-out (a descriptor's handler, an instrument) may run the loop
  /// nested before step 9 reaches it in the batch. Until the flag is cleared every
  /// `wakeUp()` skips its write, and a nested run would sleep through them all.
  private func acknowledgeWake(in buffer: UnsafeMutableRawPointer, count: Int) {
    for index in 0..<count where poller.event(index, in: buffer).token == Poller.wakeToken {
      wakeWasSeen()
      return
    }
  }

  /// Clears the wake flag (the state goes from `written` back to `awake`) once the wake-up's
  /// event was taken from `epoll`. A `wakeUp()` that still sees `written` skips its write:
  /// what it changed is read after this, in this pass. Sequentially consistent, with the
  /// fence in `wakeUp()`: either the pass sees what the waker changed before calling
  /// `wakeUp()`, or the waker sees `awake` and writes, which reports a new event.
  private func wakeWasSeen() {
    wakeState.store(WakeState.awake, ordering: .sequentiallyConsistent)
  }

  /// Step 7: sleeps until the earliest of the run's deadline and the providers' deadlines,
  /// an event, or a wake-up. Returns the number of events.
  private func sleep(mode: LoopMode, plan: RunPlan, poll: Bool, buffer: UnsafeMutableRawPointer)
    -> Int
  {
    if poll {
      let count = poller.wait(into: buffer, block: false)
      acknowledgeWake(in: buffer, count: count)
      return count
    }
    var wake = plan.deadlineNanoseconds
    refreshPassCache(for: mode)
    if !local.passCache.providers.isEmpty { wake = earliestDeadline(in: mode, before: wake) }
    poller.arm(nanoseconds: wake)
    guard refreshInstruments().contains(.sleeps) else {
      let count = blockingWait(into: buffer)
      acknowledgeWake(in: buffer, count: count)
      return count
    }
    return timedSleep(into: buffer)
  }

  /// The earliest of `deadline` and the providers' next deadlines in `mode`. Not inlined:
  /// the providers' `ContinuousClock.Instant?` made `sleep` fetch that type's metadata on
  /// every pass, providers or not.
  @inline(never)
  private func earliestDeadline(in mode: LoopMode, before deadline: Int64?) -> Int64? {
    var wake = deadline
    for provider in local.passCache.providers {
      guard let due = provider.nextDeadline(in: mode, of: self) else { continue }
      let dueNanoseconds = ClockReference.nanoseconds(of: due)
      if wake.map({ dueNanoseconds < $0 }) ?? true { wake = dueNanoseconds }
    }
    return wake
  }

  // Not inlined: its clock readings make the caller fetch `ContinuousClock.Instant`'s type
  // metadata on every pass, timed or not.
  @inline(never)
  private func timedSleep(into buffer: UnsafeMutableRawPointer) -> Int {
    let start = ContinuousClock.now
    let count = blockingWait(into: buffer)
    acknowledgeWake(in: buffer, count: count)
    reportSleep(from: start, to: .now)
    return count
  }

  /// Step 9: handles wake-ups, timers and ready descriptors. Returns whether a source was
  /// handled (descriptors count; timers and wake-ups never do).
  private func handleEvents(
    _ count: Int, in buffer: UnsafeMutableRawPointer, mode: LoopMode, plan: RunPlan,
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
        // Nothing to read (the eventfd is edge-triggered, see `Poller`), and the flag was
        // cleared when the batch was taken (see `acknowledgeWake(in:count:)`).
        break
      case Poller.timerToken:
        poller.drainTimer()
      default:
        guard !skipPorts, local.runsStarted == runsBefore,
          let watch = runnableWatch(token: token, mode: mode)
        else { continue }
        if plan.returnAfterSourceHandled {
          // Only one source per run: keep the lowest order; the others stay ready.
          if chosen.map({ watch.order < $0.watch.order }) ?? true {
            chosen = (watch, mask)
          }
        } else {
          callOut(watch, mask: mask)
          handled = true
        }
      }
    }
    fireDueTimers(mode: mode)
    if let chosen, local.runsStarted == runsBefore {
      callOut(chosen.watch, mask: chosen.mask)
      handled = true
    }
    return handled
  }

  private func callOut(_ watch: DescriptorWatch, mask: UInt32) {
    // Invalidated by an earlier call-out of this pass (or by another thread just now).
    guard watch.isValid else { return }
    let events = DescriptorEvents(epollMask: mask)
    callOut(watch.calloutKind, name: watch.name) { watch.handler(events) }
  }

  /// The watch for `token` if it runs in `mode`; a watch of another mode is held: taken out of
  /// the `epoll` set (switching its interest off is not enough: `epoll` always reports errors
  /// and hang-ups) so that it does not wake the loop again until its mode runs.
  private func runnableWatch(token: UInt64, mode: LoopMode) -> DescriptorWatch? {
    refreshPassCache(for: mode)
    let isCommon = local.passCache.isCommon
    return state.withLock { state -> DescriptorWatch? in
      guard let watch = state.watchesByToken[token] else { return nil }
      if Self.watch(watch, runsIn: mode, isCommon: isCommon, table: state.watches) { return watch }
      state.heldTokens.insert(token)
      poller.remove(watch.fileDescriptor)
      return nil
    }
  }

  /// Asks each provider to fire what is due in `mode`. Providers decide what is due (a timer
  /// with tolerance may fire early in its window when the loop is awake anyway).
  @inline(__always)
  private func fireDueTimers(mode: LoopMode) {
    refreshPassCache(for: mode)
    guard !local.passCache.providers.isEmpty else { return }
    fireDueTimers(of: local.passCache.providers, in: mode)
  }

  // Not inlined: reading the clock as a `ContinuousClock.Instant` made the caller fetch that
  // type's metadata on every pass, providers or not.
  @inline(never)
  private func fireDueTimers(of providers: [any LoopDeadlineProvider], in mode: LoopMode) {
    let now = ContinuousClock.now
    for provider in providers {
      provider.fireDue(in: mode, of: self, now: now)
    }
  }
}
