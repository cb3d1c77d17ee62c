import CRunLoopLinux
import Synchronization

/// How the loop tells instruments what it does, and the one path of every call-out into
/// user code. With no instrument attached, a notification costs two atomic loads and a
/// call-out one, with no clock read, no span and no allocation.
extension EventRunLoop {
  /// Attaches an instrument to this loop. Safe from any thread; it hears from the next
  /// activity on.
  ///
  /// ```swift
  /// loop.addInstrument(recorder)
  /// ```
  public func addInstrument(_ instrument: any RunLoopInstrument) {
    state.withLock { $0.instruments.append(instrument) }
    noteInstrumentAdded(instrument)
    instrumentsVersion.wrappingAdd(1, ordering: .releasing)
  }

  /// Detaches an instrument from this loop. Safe from any thread.
  ///
  /// ```swift
  /// loop.removeInstrument(recorder)
  /// ```
  public func removeInstrument(_ instrument: any RunLoopInstrument) {
    let removed = state.withLock { state -> Bool in
      guard let index = state.instruments.firstIndex(where: { $0 === instrument }) else {
        return false
      }
      state.instruments.remove(at: index)
      return true
    }
    if removed {
      noteInstrumentRemoved(instrument)
      instrumentsVersion.wrappingAdd(1, ordering: .releasing)
    }
  }

  /// Attaches an instrument to every loop of the process, present and future.
  ///
  /// ```swift
  /// EventRunLoop.addProcessInstrument(tracer)
  /// ```
  public static func addProcessInstrument(_ instrument: any RunLoopInstrument) {
    processInstruments.withLock { $0.append(instrument) }
    noteInstrumentAdded(instrument)
    processInstrumentsVersion.wrappingAdd(1, ordering: .releasing)
  }

  /// Detaches a process-wide instrument.
  ///
  /// ```swift
  /// EventRunLoop.removeProcessInstrument(tracer)
  /// ```
  public static func removeProcessInstrument(_ instrument: any RunLoopInstrument) {
    let removed = processInstruments.withLock { list -> Bool in
      guard let index = list.firstIndex(where: { $0 === instrument }) else { return false }
      list.remove(at: index)
      return true
    }
    if removed {
      noteInstrumentRemoved(instrument)
      processInstrumentsVersion.wrappingAdd(1, ordering: .releasing)
    }
  }

  /// Runs `body` as a call-out into user code, on behalf of the work `cause` queued: when an
  /// instrument wants call-outs, the loop times it, gives it a span (see ``CalloutRecord/span``) and reports a
  /// ``CalloutRecord``; otherwise it just runs it. The package's other modules that call
  /// user code on the loop (timers, observers) go through this so that traces see them.
  ///
  /// Call it on the loop's thread; from another thread it just runs `body`.
  package func withCallout<Result, Failure: Error>(
    _ kind: CalloutKind, name: String, dueAt: ContinuousClock.Instant? = nil,
    cause: CalloutCause? = nil, contexts: CapturedContexts? = nil,
    _ body: () throws(Failure) -> Result
  ) throws(Failure) -> Result {
    guard wantsCallouts() else { return try body() }
    return try tracedCallout(kind, name: name, cause: cause, contexts: contexts, body) { dueAt }
  }

  /// ``withCallout(_:name:dueAt:cause:contexts:_:)`` for the loop's own call-outs, with `dueAt` a
  /// ``LoopClock`` reading, the `cause` of the work (see ``CalloutCause``) and the contexts
  /// captured as it was queued (see ``InstrumentInterests/contexts``): the one
  /// place every call-out of a pass goes through. Kind, name, due time and cause are read
  /// only when an instrument wants the call-out, so an untraced one costs one atomic load
  /// and does not fetch its kind (a global) or its name.
  package func callOut<Result, Failure: Error>(
    _ kind: @autoclosure () -> CalloutKind, name: @autoclosure () -> String,
    dueAt: @autoclosure () -> Int64? = nil, cause: @autoclosure () -> CalloutCause? = nil,
    contexts: @autoclosure () -> CapturedContexts? = nil, _ body: () throws(Failure) -> Result
  ) throws(Failure) -> Result {
    guard wantsCallouts() else { return try body() }
    return try tracedCallout(kind(), name: name(), cause: cause(), contexts: contexts(), body) {
      dueAt().map(LoopClock.instant(ofNanoseconds:))
    }
  }

  /// A call-out an instrument wants: run inside the contexts of the instruments that ask
  /// for them (see ``InstrumentInterests/contexts``; a bit test when none does), then traced.
  private func tracedCallout<Result, Failure: Error>(
    _ kind: CalloutKind, name: String, cause: CalloutCause?, contexts: CapturedContexts?,
    _ body: () throws(Failure) -> Result, dueAt: () -> ContinuousClock.Instant?
  ) throws(Failure) -> Result {
    guard local.instruments.interests.contains(.contexts) else {
      return try timedCallout(kind, name: name, cause: cause, identity: nil, body, dueAt: dueAt)
    }
    return try calloutInContexts(
      local.instruments.entries[...], kind, name: name, cause: cause, contexts: contexts,
      identity: nil, body, dueAt: dueAt)
  }

  /// Hands the call-out to the first context instrument of `entries`, which runs the rest
  /// inside its context; the innermost identity an instrument gives names the call-out.
  private func calloutInContexts<Result, Failure: Error>(
    _ entries: ArraySlice<InstrumentCache.Entry>, _ kind: CalloutKind, name: String,
    cause: CalloutCause?, contexts: CapturedContexts?, identity: CalloutIdentity?,
    _ body: () throws(Failure) -> Result, dueAt: () -> ContinuousClock.Instant?
  ) throws(Failure) -> Result {
    guard let index = entries.firstIndex(where: { $0.interests.contains(.contexts) }) else {
      return try timedCallout(
        kind, name: name, cause: cause, identity: identity, body, dueAt: dueAt)
    }
    let instrument = entries[index].instrument
    return try instrument.runLoop(
      self, callingOut: kind, name: name, cause: cause,
      context: contexts?.context(capturedBy: instrument), passInfo()
    ) { (given: CalloutIdentity?) throws(Failure) -> Result in
      try calloutInContexts(
        entries[(index + 1)...], kind, name: name, cause: cause, contexts: contexts,
        identity: given ?? identity, body, dueAt: dueAt)
    }
  }

  /// The call-out itself: a span (the instruments' `identity`, or a new one), published in
  /// the thread's call-out context for its duration (so that whatever it queues can name it
  /// as the cause; the outer call-out's context is restored after, for call-outs of nested
  /// runs), timed and reported.
  private func timedCallout<Result, Failure: Error>(
    _ kind: CalloutKind, name: String, cause: CalloutCause?, identity: CalloutIdentity?,
    _ body: () throws(Failure) -> Result, dueAt: () -> ContinuousClock.Instant?
  ) throws(Failure) -> Result {
    let context = crl_current_callout_context()!
    let outer = context.pointee
    let span = identity?.span ?? crl_next_span()
    let trace = identity?.traceID ?? cause?.traceID
    context.pointee = crl_callout_context(
      span: span, loop: id, trace_high: trace?.high ?? 0, trace_low: trace?.low ?? 0)
    announceCallout(kind, name: name)
    let start = LoopClock.now()
    defer {
      let end = LoopClock.now()
      // Read back: a call-out without a trace starts one when it sends a named-port frame.
      let traceID = (context.pointee.trace_high, context.pointee.trace_low)
      context.pointee = outer
      reportCallout(
        CalloutRecord(
          kind: kind, name: name, start: LoopClock.instant(ofNanoseconds: start),
          end: LoopClock.instant(ofNanoseconds: end), dueAt: dueAt(), span: span, cause: cause,
          traceID: traceID == (0, 0) ? nil : traceID))
    }
    return try body()
  }

  /// Whether an instrument of this loop wants call-outs: first the process-wide count of
  /// instruments that want them (one atomic load; usually 0), then the thread-local look-up
  /// of `isCurrent` (from another thread a call-out is not reported).
  private func wantsCallouts() -> Bool {
    calloutInstrumentCount.load(ordering: .relaxed) > 0 && isCurrent
      && refreshInstruments().contains(.callouts)
  }

  /// Tells the instruments that asked for call-out starts that one begins (a bit test when
  /// none did).
  private func announceCallout(_ kind: CalloutKind, name: String) {
    guard local.instruments.interests.contains(.calloutStarts) else { return }
    let info = passInfo()
    for entry in local.instruments.entries where entry.interests.contains(.calloutStarts) {
      entry.instrument.runLoop(self, willCallOut: kind, name: name, info)
    }
  }

  private func reportCallout(_ record: CalloutRecord) {
    let info = passInfo()
    for entry in local.instruments.entries where entry.interests.contains(.callouts) {
      entry.instrument.runLoop(self, didCallOut: record, info)
    }
  }

  /// Tells the instruments that want activities that the loop reached `activity`.
  // Always inlined: the pass calls it four times with a constant, which makes the step a
  // constant store.
  @inline(__always)
  func notify(_ activity: LoopActivity) {
    local.step = UInt8(truncatingIfNeeded: activity.step)
    guard refreshInstruments().contains(.activities) else { return }
    tellInstruments(activity)
  }

  // Out of line: the slow path of a check made four times a pass (see Docs/Performance.md,
  // "What the annotations buy").
  @inline(never)
  private func tellInstruments(_ activity: LoopActivity) {
    let info = passInfo()
    // Iterate a copy: an instrument may add or remove instruments while it is called.
    let entries = local.instruments.entries
    for entry in entries where entry.interests.contains(.activities) {
      entry.instrument.runLoop(self, didReach: activity, info)
    }
  }

  /// Tells the instruments that want sleeps about one (two ``LoopClock`` readings).
  func reportSleep(from start: Int64, to end: Int64) {
    let info = passInfo()
    let (from, to) = (
      LoopClock.instant(ofNanoseconds: start), LoopClock.instant(ofNanoseconds: end)
    )
    let entries = local.instruments.entries
    for entry in entries where entry.interests.contains(.sleeps) {
      entry.instrument.runLoop(self, didSleepFrom: from, to: to, info)
    }
  }

  private func passInfo() -> LoopPassInfo {
    LoopPassInfo(
      loopID: id, mode: local.innermostMode ?? .default, iteration: local.iteration,
      depth: local.depth, step: Int(local.step))
  }

  /// Brings the loop thread's instrument list up to date and returns what the instruments
  /// want together: two atomic loads when nothing changed, a rebuild otherwise.
  func refreshInstruments() -> InstrumentInterests {
    let localVersion = instrumentsVersion.load(ordering: .acquiring)
    let processVersion = processInstrumentsVersion.load(ordering: .acquiring)
    if localVersion != local.instruments.localVersion
      || processVersion != local.instruments.processVersion
    {
      rebuildInstrumentCache(localVersion: localVersion, processVersion: processVersion)
    }
    return local.instruments.interests
  }

  // Out of line: the slow path of the check above (see Docs/Performance.md, "What the
  // annotations buy").
  @inline(never)
  private func rebuildInstrumentCache(localVersion: UInt64, processVersion: UInt64) {
    assertOnLoopThread()
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
    let entries = all.map { InstrumentCache.Entry(instrument: $0, interests: $0.interests) }
    local.instruments = InstrumentCache(
      localVersion: localVersion, processVersion: processVersion, entries: entries,
      interests: entries.reduce(into: []) { $0.formUnion($1.interests) })
  }
}

/// The loop thread's copy of its instruments (its own and the process's), refreshed when
/// either list changes, so that notifying costs two atomic loads when nothing changed. Each
/// instrument's ``RunLoopInstrument/interests`` are read once, here.
struct InstrumentCache {
  struct Entry {
    let instrument: any RunLoopInstrument
    let interests: InstrumentInterests
  }

  var localVersion: UInt64 = .max
  var processVersion: UInt64 = .max
  var entries: [Entry] = []
  var interests: InstrumentInterests = []
}

let processInstruments = GuardedState<[any RunLoopInstrument]>([])
let processInstrumentsVersion = Atomic<UInt64>(0)
// How many instruments anywhere want call-outs; while 0, signals record no time stamps.
let calloutInstrumentCount = Atomic<Int>(0)

func noteInstrumentAdded(_ instrument: any RunLoopInstrument) {
  let interests = instrument.interests
  if interests.contains(.contexts) {
    contextInstruments.withLock { $0.append(instrument) }
    contextInstrumentCount.wrappingAdd(1, ordering: .relaxed)
  }
  guard interests.contains(.callouts) else { return }
  calloutInstrumentCount.wrappingAdd(1, ordering: .relaxed)
}

func noteInstrumentRemoved(_ instrument: any RunLoopInstrument) {
  let interests = instrument.interests
  if interests.contains(.contexts) {
    let removed = contextInstruments.withLock { list -> Bool in
      guard let index = list.firstIndex(where: { $0 === instrument }) else { return false }
      list.remove(at: index)
      return true
    }
    if removed { contextInstrumentCount.wrappingSubtract(1, ordering: .relaxed) }
  }
  guard interests.contains(.callouts) else { return }
  calloutInstrumentCount.wrappingSubtract(1, ordering: .relaxed)
}
