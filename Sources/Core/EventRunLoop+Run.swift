import CRunLoopLinux

/// The run API, after the guide's "Starting the Run Loop" and CoreFoundation's
/// `CFRunLoopRun`, `CFRunLoopRunInMode` and Foundation's `run(until:)` and
/// `run(mode:before:)`. Every method must be called on the loop's own thread and may be
/// called again from inside any call-out (a nested run), in any mode.
extension EventRunLoop {
  /// Runs the loop in ``LoopMode/default`` until ``stop()`` is called or the mode has
  /// nothing left to watch (CoreFoundation's `CFRunLoopRun`).
  ///
  /// Unlike Foundation's `RunLoop.run()`, which restarts after a stop, this returns when
  /// stopped, so a thread can end its loop.
  ///
  /// ```swift
  /// try EventRunLoop.current.run()  // returns .stopped or .finished
  /// ```
  ///
  /// - Throws: ``RunLoopError/Code/notOwningThread`` when called off the loop's thread.
  @discardableResult
  public func run() throws(RunLoopError) -> RunResult {
    while true {
      let result = try run(mode: .default, timeout: nil)
      if result == .stopped || result == .finished { return result }
    }
  }

  /// Runs the loop in ``LoopMode/default`` until `deadline`, ``stop()``, or until the mode
  /// has nothing left to watch (Foundation's `run(until:)`).
  ///
  /// Foundation's version keeps going after a stop; this one returns ``RunResult/stopped``
  /// so that ``stop()`` always works. It returns ``RunResult/timedOut`` at the deadline.
  ///
  /// ```swift
  /// try loop.run(until: .now + .seconds(2))
  /// ```
  @discardableResult
  public func run(until deadline: ContinuousClock.Instant) throws(RunLoopError) -> RunResult {
    while true {
      let remaining = deadline - .now
      let result = try run(mode: .default, timeout: max(remaining, .zero))
      switch result {
      case .stopped, .finished: return result
      case .timedOut, .handledSource:
        if ContinuousClock.now >= deadline { return .timedOut }
      }
    }
  }

  /// Runs the loop once in `mode` until one source is handled or `deadline` passes, and
  /// returns whether the loop ran at all (Foundation's `run(mode:before:)`): `false` when
  /// the mode is empty.
  ///
  /// Timers fire and blocks run along the way, but they do not end the run.
  ///
  /// ```swift
  /// while !done, try loop.run(mode: .default, before: .now + .seconds(1)) {}
  /// ```
  @discardableResult
  public func run(mode: LoopMode, before deadline: ContinuousClock.Instant) throws(RunLoopError)
    -> Bool
  {
    let result = try run(
      mode: mode, timeout: max(deadline - .now, .zero), returnAfterSourceHandled: true)
    return result != .finished
  }

  /// Runs the loop in `mode` for at most `timeout` (CoreFoundation's `CFRunLoopRunInMode`).
  ///
  /// - Parameters:
  ///   - mode: the mode to run in; ``LoopMode/common`` is not a mode one can run in.
  ///   - timeout: how long to run; `nil` runs until stopped or finished. A zero or negative
  ///     timeout makes one pass that never sleeps and never reports `beforeWaiting` or
  ///     `afterWaiting`.
  ///   - returnAfterSourceHandled: return after the first source is handled. Then only the
  ///     first ready custom source (lowest order) runs. Timers and perform requests never
  ///     count as handled sources.
  /// - Returns: why the run ended.
  /// - Throws: ``RunLoopError/Code/notOwningThread`` off the loop's thread,
  ///   ``RunLoopError/Code/invalidArgument`` for `.common`.
  ///
  /// ```swift
  /// let result = try loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
  /// ```
  @discardableResult
  public func run(
    mode: LoopMode, timeout: Duration?, returnAfterSourceHandled: Bool = false
  ) throws(RunLoopError) -> RunResult {
    guard isCurrent else { throw notOwningThreadToRun() }
    guard !mode.isCommonModes else {
      throw .invalidArgument("'.common' names a set of modes; run in one of them instead")
    }
    let plan: RunPlan
    // Compared as `attoseconds`, which the compiler sees through: `Duration`'s own `<=` and
    // `.zero` are calls into the standard library, a tenth of an empty pass's own work.
    if let timeout, timeout.attoseconds <= 0 {
      plan = RunPlan(
        deadline: nil, neverBlocks: true, returnAfterSourceHandled: returnAfterSourceHandled)
    } else if let timeout, timeout.attoseconds < Self.foreverAttoseconds {
      plan = RunPlan(
        deadline: LoopClock.nanoseconds(of: .now + timeout), neverBlocks: false,
        returnAfterSourceHandled: returnAfterSourceHandled)
    } else {
      plan = RunPlan(
        deadline: nil, neverBlocks: false, returnAfterSourceHandled: returnAfterSourceHandled)
    }
    return runSpecific(mode: mode, plan: plan)
  }

  /// Runs the loop in `mode` for `seconds`, the way `CFRunLoopRunInMode` takes its timeout.
  ///
  /// A negative or `-infinity` timeout means one pass without sleeping, `+infinity` means no
  /// timeout. NaN is an error here (CoreFoundation treats it as no timeout by accident).
  ///
  /// ```swift
  /// try loop.run(mode: .default, seconds: 0.5)
  /// ```
  @discardableResult
  public func run(mode: LoopMode, seconds: Double, returnAfterSourceHandled: Bool = false)
    throws(RunLoopError) -> RunResult
  {
    guard !seconds.isNaN else { throw .invalidArgument("a timeout cannot be NaN") }
    let timeout: Duration? =
      seconds >= Double(Self.foreverSeconds) ? nil : (seconds <= 0 ? .zero : .seconds(seconds))
    return try run(mode: mode, timeout: timeout, returnAfterSourceHandled: returnAfterSourceHandled)
  }

  /// Timeouts at least this long (about 31 years) mean "no timeout".
  static let foreverSeconds: Int64 = 1 << 30
  static var foreverAttoseconds: Int128 { Int128(foreverSeconds) * 1_000_000_000_000_000_000 }

  /// One run in one mode: steps 1 and 10 of the sequence of events around the passes.
  func runSpecific(mode: LoopMode, plan: RunPlan) -> RunResult {
    assertOnLoopThread()
    if isMain { installMainQueueWatchIfNeeded() }
    let depth = beginRun(mode: mode)
    let facts = self[passIn: mode].runStart
    var active = ActiveMode(mode: mode, isCommon: facts.isCommon)
    // An empty mode returns before any observer hears anything, as CFRunLoop does. A mode
    // with sources or watches is not empty: that, the usual case, is told here without a call.
    if !facts.hasSourcesOrWatches, modeIsEmpty(active) {
      endRun(depth: depth)
      return .finished
    }
    local.runsStarted &+= 1
    // CFRunLoop gives each run a fresh "ignore wake-ups" flag: wake-ups count from here
    // on, and one made where they were ignored (no run active, or an outer run between
    // waking and its next pass) is dropped now.
    let outerIgnoring = local.ignoringWakeUps
    if outerIgnoring { startCountingWakeUps(active) }
    let wakeUpsTakenBefore = local.wakeUpsTaken
    let outerStep = local.step
    notify(.entry)  // Step 1
    // A stop made before the first pass (by the entry observer, say) ends the run at once,
    // as in CFRunLoop.
    let result = runs.takeStopRequest() ? .stopped : runPasses(&active, depth: depth, plan: plan)
    notify(.exit)  // Step 10
    local.step = outerStep
    // A run nested in a pass that has not woken yet may have taken (or dropped) a wake-up
    // announcing work it could not do: a perform request or job of a mode it does not run.
    // The outer pass, which may already have looked, gets one back, so its sleep does not
    // block. (CFRunLoop loses such a wake-up.)
    if !outerIgnoring {
      if local.wakeUpsTaken != wakeUpsTakenBefore { waker.wake() }
      local.ignoringWakeUps = false
      local.keepsNote = false
    } else if !local.ignoringWakeUps {
      startIgnoringWakeUps()
    }
    endRun(depth: depth)
    return result
  }

  /// Makes a run in `mode` the innermost: recorded on the loop's thread, published in
  /// ``ActiveRuns`` for the others (its mode under the lock only when it differs from the
  /// last run's at its depth). Returns the run's depth.
  private func beginRun(mode: LoopMode) -> Int {
    let depth = local.depth + 1
    if local.runs.count < depth || local.runs[depth - 1].mode != mode {
      setRunMode(mode, depth: depth)
    }
    local.depth = depth
    if runs.runBegins(depth: depth) { local.runs[depth - 2].stopRequested = true }
    return depth
  }

  /// Records `mode` as the mode of the run at `depth`, and publishes it for other threads
  /// (before the run's depth is published).
  private func setRunMode(_ mode: LoopMode, depth: Int) {
    state.withLock { state in
      if state.runModes.count < depth {
        state.runModes.append(mode)
      } else {
        state.runModes[depth - 1] = mode
      }
    }
    if local.runs.count < depth {
      local.runs.append(RunFrame(mode: mode))
    } else {
      local.runs[depth - 1].mode = mode
    }
  }

  /// Ends the innermost run: the run it was nested in gets back its stop request; the
  /// outermost lets go of a pass snapshot that holds deadline sources (see
  /// `PassSnapshotSlot`).
  private func endRun(depth: Int) {
    local.depth = depth - 1
    guard depth == 1 else {
      let outerStop = local.runs[depth - 2].stopRequested
      if outerStop { local.runs[depth - 2].stopRequested = false }
      runs.runEnds(depth: depth, outerStopRequested: outerStop)
      return
    }
    runs.runEnds(depth: 1, outerStopRequested: false)
    local.passSnapshot.dropIfItHoldsDeadlineSources()
  }

  /// Whether a run in `active` would have nothing to wait for: no sources, no descriptors,
  /// no deadline-source items, no perform requests or jobs for it.
  func modeIsEmpty(_ active: ActiveMode) -> Bool {
    if self[passIn: active.mode].hasSourcesOrWatches { return false }
    if hasPerformRequests(for: active) { return false }
    if hasJobs(for: active) { return false }
    return !self[passIn: active.mode].deadlineSources.contains { $0.hasItems(in: active) }
  }
}

/// How one run should go.
struct RunPlan {
  /// When the run times out, a ``LoopClock`` reading; `nil` for never (or for a run that
  /// never blocks).
  let deadline: Int64?
  /// A zero timeout: one pass that takes the events that are there and never blocks.
  let neverBlocks: Bool
  let returnAfterSourceHandled: Bool
}
