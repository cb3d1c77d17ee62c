/// How the loop tells instruments what it does. With no instrument attached, each
/// notification costs two atomic loads and no clock read or allocation.
extension EventRunLoop {
  /// Runs `body` as a call-out into user code: when an instrument wants call-outs, the loop
  /// times it and reports a ``CalloutRecord``; otherwise it just runs it. Modules that call
  /// user code on the loop (timers, ports) go through this so that traces see them.
  ///
  /// Call it on the loop's thread; from another thread it just runs `body`.
  ///
  /// ```swift
  /// loop.withCallout(.timer, name: timer.name, dueAt: fireDate) { timer.handler(timer) }
  /// ```
  public func withCallout<Result, Failure: Error>(
    _ kind: CalloutKind, name: String, dueAt: ContinuousClock.Instant? = nil,
    _ body: () throws(Failure) -> Result
  ) throws(Failure) -> Result {
    // First the process-wide count of instruments that want call-outs (one atomic load;
    // usually 0), then the thread-local look-up of `isCurrent`.
    guard calloutInstrumentCount.load(ordering: .relaxed) > 0, isCurrent,
      refreshInstruments().contains(.callouts)
    else { return try body() }
    if local.instrumentCache.interests.contains(.calloutStarts) {
      announceCallout(kind, name: name)
    }
    let start = ContinuousClock.now
    defer {
      let record = CalloutRecord(kind: kind, name: name, start: start, end: .now, dueAt: dueAt)
      let info = passInfo()
      for instrument in local.instrumentCache.instruments
      where instrument.interests.contains(.callouts) {
        instrument.runLoop(self, didCallOut: record, info)
      }
    }
    return try body()
  }

  /// `withCallout` without a due time, for the loop's own call-outs: when no instrument
  /// anywhere wants call-outs (the usual case) it calls `body` without building the
  /// arguments of `withCallout`, whose `ContinuousClock.Instant?` goes through the
  /// Concurrency module's value witnesses (that type's layout is hidden from this module).
  @inline(__always)
  func callOut(_ kind: CalloutKind, name: String, _ body: () -> Void) {
    if calloutInstrumentCount.load(ordering: .relaxed) > 0 {
      tracedCallOut(kind, name: name, body)
    } else {
      body()
    }
  }

  // Not inlined: inlined, `withCallout` makes its caller fetch the type metadata of
  // `CalloutRecord` and `ContinuousClock.Instant?` on every call, traced or not.
  @inline(never)
  private func tracedCallOut(_ kind: CalloutKind, name: String, _ body: () -> Void) {
    withCallout(kind, name: name, dueAt: nil, body)
  }

  /// Tells the instruments that want call-out starts that one begins.
  private func announceCallout(_ kind: CalloutKind, name: String) {
    let info = passInfo()
    for instrument in local.instrumentCache.instruments
    where instrument.interests.contains(.calloutStarts) {
      instrument.runLoop(self, willCallOut: kind, name: name, info)
    }
  }

  /// Tells the instruments that want activities that the loop reached `activity`. Inlined:
  /// a pass notifies four times, and without instruments each is two atomic loads.
  @inline(__always)
  func notify(_ activity: LoopActivity) {
    guard refreshInstruments().contains(.activities) else { return }
    tellInstruments(activity)
  }

  @inline(never)
  private func tellInstruments(_ activity: LoopActivity) {
    let info = passInfo()
    // Iterate a copy: an instrument may add or remove instruments while it is called.
    let instruments = local.instrumentCache.instruments
    for instrument in instruments where instrument.interests.contains(.activities) {
      instrument.runLoop(self, didReach: activity, info)
    }
  }

  func reportSleep(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) {
    let info = passInfo()
    let instruments = local.instrumentCache.instruments
    for instrument in instruments where instrument.interests.contains(.sleeps) {
      instrument.runLoop(self, didSleepFrom: start, to: end, info)
    }
  }

  private func passInfo() -> LoopPassInfo {
    LoopPassInfo(
      loopID: id, mode: local.modes.last ?? .default, iteration: local.iteration,
      depth: local.modes.count)
  }

  /// Brings the loop thread's instrument list up to date and returns what the instruments
  /// want together: two atomic loads when nothing changed (inlined), a rebuild otherwise.
  @inline(__always)
  func refreshInstruments() -> InstrumentInterests {
    let localVersion = instrumentsVersion.load(ordering: .acquiring)
    let processVersion = processInstrumentsVersion.load(ordering: .acquiring)
    if localVersion != local.instrumentCache.localVersion
      || processVersion != local.instrumentCache.processVersion
    {
      rebuildInstrumentCache(localVersion: localVersion, processVersion: processVersion)
    }
    return local.instrumentCache.interests
  }

  @inline(never)
  private func rebuildInstrumentCache(localVersion: UInt64, processVersion: UInt64) {
    let own = state.withLock { $0.instruments }
    let everyLoop = processInstruments.withLock { $0 }
    // An instrument attached both to this loop and to every loop hears each event once.
    var all: [any RunLoopInstrument] = []
    for instrument in everyLoop + own where !all.contains(where: { $0 === instrument }) {
      all.append(instrument)
    }
    // Stable: equal orders keep the order of attachment.
    all = all.enumerated().sorted {
      ($0.element.notificationOrder, $0.offset) < ($1.element.notificationOrder, $1.offset)
    }.map(\.element)
    local.instrumentCache = InstrumentCache(
      localVersion: localVersion, processVersion: processVersion, instruments: all,
      interests: all.reduce(into: []) { $0.formUnion($1.interests) })
  }
}
