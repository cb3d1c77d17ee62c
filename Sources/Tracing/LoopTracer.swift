import Glibc
import RunLoopCore
import RunLoopObservers

/// Records everything a run loop does — every activity, every call-out (with its kind,
/// name, duration and due time) and every sleep (with its length) — as ``TraceRecord``
/// values handed to sinks (``JSONLinesSink``, the RunLoopJournal module's `JournalSink`).
///
/// Attach it to one loop or to every loop of the process. On the loop thread the tracer only
/// reads two clocks, builds the record and hands it to each sink's queue; the sinks write on
/// their own threads. A loop with no tracer attached pays nothing: the loop reads no clock
/// for instruments it does not have.
///
/// ```swift
/// let sink = try JSONLinesSink(path: "/tmp/worker.jsonl")
/// let tracer = LoopTracer(sinks: [sink])
/// tracer.attach(to: worker.runLoop)   // or tracer.attachToAllLoops()
/// // ...
/// tracer.close()
/// ```
///
/// Many tracers may feed one sink (a tracer per request thread, say). Each sink of this
/// package keeps a tracer's strings only while the tracer lives: when it is closed or
/// deinitialised, the sink releases them after the tracer's last queued record, so a
/// long-lived sink holds the strings of the live tracers only.
///
/// ```swift
/// let shared = try JSONLinesSink(path: "/tmp/requests.jsonl")
/// let tracer = LoopTracer(sinks: [shared])  // one per request
/// tracer.attach(to: .current)
/// // ... handle the request ...
/// tracer.detach()  // then drop it: `shared` stays open for the other tracers
/// ```
public final class LoopTracer: RunLoopInstrument, Sendable {
  /// The id every record of this tracer carries in `run`, to tell traces apart.
  public let runID: String
  /// Where records go.
  public let sinks: [any TraceSink]
  /// The tracer wants activities, call-outs and sleeps; and call-out starts too while
  /// ``LoopContext/isPublished`` is on (so that the context names the call-out a loop is
  /// in). A loop reads this when the tracer is attached.
  public var interests: InstrumentInterests {
    LoopContext.isPublished ? InstrumentInterests.all.union(.calloutStarts) : .all
  }

  // The tracer's strings, record numbers and thread names, under one lock.
  private let strings: TraceStrings
  // The sinks of this package take compact events (their writer threads build the
  // records); any other sink takes whole records built here, on the loop thread.
  private let eventSinks: [(sink: any TraceEventSink, source: UInt32)]
  private let recordSinks: [any TraceSink]
  // Where the tracer is attached, and whether it was closed.
  private let attachments = Attachments()

  /// Creates a tracer that sends its records to `sinks`.
  ///
  /// - Parameters:
  ///   - sinks: where records go, in order.
  ///   - runID: the id to put in every record; a random one by default.
  ///
  /// ```swift
  /// let tracer = LoopTracer(sinks: [try JSONLinesSink(path: "t.jsonl")], runID: "bench-1")
  /// ```
  public init(sinks: [any TraceSink], runID: String? = nil) {
    self.sinks = sinks
    let runID = runID ?? String(UInt64.random(in: 1...UInt64.max), radix: 16)
    self.runID = runID
    let strings = TraceStrings(runID: runID, processID: getpid())
    self.strings = strings
    var eventSinks: [(sink: any TraceEventSink, source: UInt32)] = []
    var recordSinks: [any TraceSink] = []
    for sink in sinks {
      if let eventSink = sink as? any TraceEventSink {
        eventSinks.append((eventSink, eventSink._register(strings)))
      } else {
        recordSinks.append(sink)
      }
    }
    self.eventSinks = eventSinks
    self.recordSinks = recordSinks
  }

  /// Traces `loop` from its next activity on. Safe from any thread; attaching to the same
  /// loop twice does nothing.
  ///
  /// ```swift
  /// tracer.attach(to: .current)
  /// ```
  public func attach(to loop: EventRunLoop) {
    attachments.attach(self, to: loop)
  }

  /// Traces every loop of the process, present and future.
  ///
  /// ```swift
  /// tracer.attachToAllLoops()
  /// ```
  public func attachToAllLoops() {
    attachments.attachToAllLoops(self)
  }

  /// Stops tracing every loop; the sinks stay open.
  ///
  /// ```swift
  /// tracer.detach()
  /// ```
  public func detach() {
    attachments.detach(self)
  }

  /// Detaches, then closes every sink (which writes what they have queued). The tracer
  /// records nothing after this, not even from a loop that has not seen the detach yet; the
  /// sinks of this package let go of its strings once its queued records are written.
  ///
  /// To end one of several tracers that share a long-lived sink, call ``detach()`` and let
  /// the tracer go instead: its sinks stay open, and each releases the tracer's strings once
  /// the tracer is deinitialised and its records are written.
  ///
  /// ```swift
  /// tracer.close()
  /// ```
  public func close() {
    guard beginClose() else { return }
    for sink in sinks { sink.close() }
  }

  /// Like ``close()``, with one bound for all the sinks together rather than each sink's
  /// own in turn: every sink gets the same deadline (``TraceSink/close(before:)``). Returns
  /// whether every sink wrote everything; a sink that did not says what it left behind in
  /// its statistics. A second call returns `true` at once.
  ///
  /// ```swift
  /// if !tracer.close(timeout: .seconds(5)) { print("some trace records were not written") }
  /// ```
  @discardableResult
  public func close(timeout: Duration) -> Bool {
    let deadline = ContinuousClock.now + timeout
    guard beginClose() else { return true }
    var complete = true
    for sink in sinks where !sink.close(before: deadline) { complete = false }
    return complete
  }

  /// Marks the tracer closed, detaches and lets go of the strings; `false` when it was
  /// closed already.
  private func beginClose() -> Bool {
    guard attachments.close() else { return false }
    detach()
    releaseTables()
    return true
  }

  // A tracer that is simply let go (detached, the last reference dropped) releases its
  // tables too: no loop can still be calling it then.
  deinit {
    releaseTables()
  }

  /// Forgets what the tracer keeps for the loop of an exited thread: its thread name (the
  /// tid may be reused by a later thread) and the loop itself.
  ///
  /// ```swift
  /// // the loop calls this on its thread as the thread exits
  /// ```
  public func runLoopThreadDidExit(_ loop: EventRunLoop) {
    strings.forgetThread(loop.threadID)
    attachments.forget(loop)
  }

  /// Records an activity.
  ///
  /// ```swift
  /// loop.addInstrument(tracer)  // the loop calls this on its thread
  /// ```
  public func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    if _loopContextPublished.load(ordering: .relaxed) {
      LoopContextSlot.forCurrentThread.reach(activity, run: runID, info)
    }
    var event = makeEvent(.activity, loop, info, timestamp: TraceClock.monotonicNow())
    event.activity = activity.rawValue
    send(&event, mode: info.mode.name)
  }

  /// Notes the call-out the loop enters in the thread's ``LoopContext`` (only asked for while
  /// the context is published); records nothing.
  ///
  /// ```swift
  /// LoopContext.isPublished = true  // before attaching the tracer
  /// ```
  public func runLoop(
    _ loop: EventRunLoop, willCallOut kind: CalloutKind, name: String, _ info: LoopPassInfo
  ) {
    guard _loopContextPublished.load(ordering: .relaxed) else { return }
    LoopContextSlot.forCurrentThread.beginCallout(
      kind: kind.name, name: name, run: runID, info)
  }

  /// Records a call-out, with its lateness when it had a due time.
  ///
  /// ```swift
  /// loop.addInstrument(tracer)  // the loop calls this on its thread
  /// ```
  public func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo)
  {
    if _loopContextPublished.load(ordering: .relaxed) {
      LoopContextSlot.existing?.endCallout()
    }
    var event = makeEvent(
      .callout, loop, info, timestamp: TraceClock.nanoseconds(of: callout.start))
    event.duration = TraceClock.nanoseconds(callout.duration)
    if let due = callout.dueAt {
      event.dueAt = TraceClock.nanoseconds(of: due)
      event.hasDue = true
    }
    event.span = callout.span
    event.cause = callout.cause
    if let trace = callout.traceID { (event.traceHigh, event.traceLow) = trace }
    send(&event, mode: info.mode.name, calloutKind: callout.kind.name, calloutName: callout.name)
  }

  /// Records a sleep.
  ///
  /// ```swift
  /// loop.addInstrument(tracer)  // the loop calls this on its thread
  /// ```
  public func runLoop(
    _ loop: EventRunLoop, didSleepFrom start: ContinuousClock.Instant,
    to end: ContinuousClock.Instant, _ info: LoopPassInfo
  ) {
    var event = makeEvent(.sleep, loop, info, timestamp: TraceClock.nanoseconds(of: start))
    event.duration = TraceClock.nanoseconds(end - start)
    send(&event, mode: info.mode.name)
  }

  private func makeEvent(
    _ kind: TraceRecord.Kind, _ loop: EventRunLoop, _ info: LoopPassInfo, timestamp: Int64
  ) -> TraceEvent {
    var event = TraceEvent(
      kind: kind, seq: 0, timestamp: timestamp, wallTime: TraceClock.wallNow(),
      loop: info.loopID, iteration: info.iteration, depth: info.depth, tid: loop.threadID,
      thread: TraceEvent.none, mode: TraceEvent.none)
    // Out of range (a combination of activities reports 0) means no step.
    if (1...10).contains(info.step) { event.step = UInt8(info.step) }
    return event
  }

  /// Numbers the event and names its strings, then hands it to the sinks: as the event to
  /// the sinks of this package, as a record to the others. The thread name is read once per
  /// thread: a thread renamed while traced keeps its first name in the trace (reading
  /// `/proc` at every record would cost the loop too much); it is forgotten when the
  /// thread's loop exits.
  private func send(
    _ event: inout TraceEvent, mode: String, calloutKind: String? = nil,
    calloutName: String? = nil
  ) {
    // The events go into the sinks' queues under the table's lock, the same lock
    // acquisition that numbers them: so none can land behind the release items that close()
    // and deinit queue.
    let outcome = strings.stamp(
      &event, mode: mode, calloutKind: calloutKind, calloutName: calloutName, sinks: eventSinks)
    switch outcome {
    case .delivered:
      guard !recordSinks.isEmpty else { return }
      let record = strings.snapshot().record(for: event)
      for sink in recordSinks { sink.enqueue(record) }
    case .full:
      // The string table is full: a whole record, built here, for every sink.
      var record = TraceRecord(
        run: runID, seq: event.seq, record: event.kind, timestamp: event.timestamp,
        wallTime: event.wallTime, pid: strings.processID, tid: event.tid,
        thread: strings.threadName(event.tid), loop: event.loop, mode: mode,
        iteration: event.iteration, depth: event.depth,
        step: event.step == 0 ? nil : Int(event.step),
        activity: event.kind == .activity ? TraceStrings.activityName(event.activity) : nil,
        calloutKind: calloutKind, calloutName: calloutName,
        duration: event.kind == .activity ? nil : event.duration,
        dueAt: event.hasDue ? event.dueAt : nil,
        lateness: event.hasDue ? event.lateness : nil)
      record.setSpan(event.span, cause: event.cause, trace: (event.traceHigh, event.traceLow))
      for sink in sinks { sink.enqueue(record) }
    case .released:
      // Closed: a loop that had not yet seen the detach still called.
      return
    }
  }

  /// Sends a whole record of this tracer (numbered here) to every sink: for records made off
  /// the loop thread, such as the ``StallWatchdog``'s. Returns `false` once the tracer is
  /// closed.
  func emitWhole(_ make: (_ seq: UInt64) -> TraceRecord) -> Bool {
    strings.stampWhole(make, sinks: sinks)
  }

  /// The thread name the tracer uses for `tid` (read from `/proc` when first asked).
  func threadName(_ tid: Int32) -> String {
    strings.threadName(tid)
  }

  /// Tells each sink of this package that no event of this tracer follows, so that it
  /// releases the tracer's string table once the events already queued are written.
  private func releaseTables() {
    strings.release(from: eventSinks)
  }
}
