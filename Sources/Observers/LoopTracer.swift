import Glibc
import RunLoopCore
import Synchronization

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
public final class LoopTracer: RunLoopInstrument, @unchecked Sendable {
  /// The id every record of this tracer carries in `run`, to tell traces apart.
  ///
  /// ```swift
  /// let runID = tracer.runID
  /// ```
  public let runID: String
  /// Where records go.
  ///
  /// ```swift
  /// let sinks = tracer.sinks
  /// ```
  public let sinks: [any TraceSink]
  /// The tracer wants activities, call-outs and sleeps.
  ///
  /// ```swift
  /// let interests = tracer.interests
  /// ```
  public var interests: InstrumentInterests { .all }

  private let sequence = Atomic<UInt64>(0)
  private let processID = getpid()
  // Guarded by its own lock: thread names by tid (read once per thread, forgotten when the
  // thread's loop exits), and where the tracer is attached.
  private let state = GuardedState(State())

  private struct State {
    var threadNames: [pid_t: String] = [:]
    // The last thread looked up: a traced loop asks for its own thread's name on every
    // record, and a hash lookup per record showed in runloop-bench's tracing profile.
    var lastThread: (tid: pid_t, name: String)?
    var loops: [EventRunLoop] = []
    var everyLoop = false
    var closed = false
  }

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
    self.runID = runID ?? String(UInt64.random(in: 1...UInt64.max), radix: 16)
  }

  /// Traces `loop` from its next activity on. Safe from any thread; attaching to the same
  /// loop twice does nothing.
  ///
  /// ```swift
  /// tracer.attach(to: .current)
  /// ```
  public func attach(to loop: EventRunLoop) {
    let added = state.withLock { state -> Bool in
      guard !state.closed, !state.loops.contains(loop) else { return false }
      state.loops.append(loop)
      return true
    }
    if added { loop.addInstrument(self) }
  }

  /// Traces every loop of the process, present and future.
  ///
  /// ```swift
  /// tracer.attachToAllLoops()
  /// ```
  public func attachToAllLoops() {
    let added = state.withLock { state -> Bool in
      guard !state.closed, !state.everyLoop else { return false }
      state.everyLoop = true
      return true
    }
    if added { EventRunLoop.addProcessInstrument(self) }
  }

  /// Stops tracing every loop; the sinks stay open.
  ///
  /// ```swift
  /// tracer.detach()
  /// ```
  public func detach() {
    let (loops, everyLoop) = state.withLock { state in
      defer {
        state.loops.removeAll()
        state.everyLoop = false
      }
      return (state.loops, state.everyLoop)
    }
    for loop in loops { loop.removeInstrument(self) }
    if everyLoop { EventRunLoop.removeProcessInstrument(self) }
  }

  /// Detaches, then closes every sink (which writes what they have queued).
  ///
  /// ```swift
  /// tracer.close()
  /// ```
  public func close() {
    let first = state.withLock { state -> Bool in
      defer { state.closed = true }
      return !state.closed
    }
    guard first else { return }
    detach()
    for sink in sinks { sink.close() }
  }

  /// Forgets what the tracer keeps for the loop of an exited thread: its thread name (the
  /// tid may be reused by a later thread) and the loop itself.
  ///
  /// ```swift
  /// // the loop calls this on its thread as the thread exits
  /// ```
  public func runLoopThreadDidExit(_ loop: EventRunLoop) {
    state.withLock { state in
      state.threadNames[loop.threadID] = nil
      if state.lastThread?.tid == loop.threadID { state.lastThread = nil }
      state.loops.removeAll { $0 === loop }
    }
  }

  /// Records an activity.
  ///
  /// ```swift
  /// loop.addInstrument(tracer)  // the loop calls this on its thread
  /// ```
  public func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    var record = makeRecord(.activity, loop, info, timestamp: _TraceClock.monotonicNow())
    record.activity = activity.name
    send(record)
  }

  /// Records a call-out, with its lateness when it had a due time.
  ///
  /// ```swift
  /// loop.addInstrument(tracer)  // the loop calls this on its thread
  /// ```
  public func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo)
  {
    let start = _TraceClock.nanoseconds(of: callout.start)
    var record = makeRecord(.callout, loop, info, timestamp: start)
    record.calloutKind = callout.kind.name
    record.calloutName = callout.name
    record.duration = _TraceClock.nanoseconds(callout.duration)
    if let due = callout.dueAt {
      let dueNanoseconds = _TraceClock.nanoseconds(of: due)
      record.dueAt = dueNanoseconds
      record.lateness = start - dueNanoseconds
    }
    send(record)
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
    var record = makeRecord(.sleep, loop, info, timestamp: _TraceClock.nanoseconds(of: start))
    record.duration = _TraceClock.nanoseconds(end - start)
    send(record)
  }

  private func makeRecord(
    _ kind: TraceRecord.Kind, _ loop: EventRunLoop, _ info: LoopPassInfo, timestamp: Int64
  ) -> TraceRecord {
    TraceRecord(
      run: runID, seq: sequence.wrappingAdd(1, ordering: .relaxed).newValue, record: kind,
      timestamp: timestamp, wallTime: _TraceClock.wallNow(), pid: processID,
      tid: loop.threadID, thread: threadName(loop.threadID), loop: info.loopID,
      mode: info.mode.name, iteration: info.iteration, depth: info.depth)
  }

  private func send(_ record: TraceRecord) {
    for sink in sinks { sink.enqueue(record) }
  }

  /// The calling (loop) thread's name, read once per thread: a thread renamed while traced
  /// keeps its first name in the trace (reading `/proc` at every record would cost the
  /// loop too much); the name is forgotten when the thread's loop exits.
  private func threadName(_ tid: pid_t) -> String {
    let cached = state.withLock { state -> String? in
      if let last = state.lastThread, last.tid == tid { return last.name }
      guard let name = state.threadNames[tid] else { return nil }
      state.lastThread = (tid, name)
      return name
    }
    if let cached { return cached }
    // Read once per thread from /proc (Glibc does not expose pthread_getname_np to Swift).
    let name = _readFirstLine("/proc/self/task/\(tid)/comm") ?? "thread-\(tid)"
    state.withLock { $0.threadNames[tid] = name }
    return name
  }
}

/// The first line of a small file, without its newline; `nil` when it cannot be read.
func _readFirstLine(_ path: String) -> String? {
  guard let file = fopen(path, "r") else { return nil }
  defer { fclose(file) }
  var buffer = [CChar](repeating: 0, count: 256)
  guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
  let bytes = buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }
  return String(decoding: bytes, as: UTF8.self)
}
