// Without RunLoopCore (the fuzz harness compiles this file on its own), records are only
// read: filling spans from a live call-out needs the core's cause type.
#if canImport(RunLoopCore)
  import RunLoopCore
#endif

/// One record of a run-loop trace: an activity the loop reached, a call-out it made, or a
/// sleep. The JSON Lines sink writes one per line (schema in
/// `Docs/RunLoopGuide.docc/TraceSchema.md` and `Docs/trace-schema.json`); the journald sink sends
/// the same fields prefixed `RUNLOOP_`.
///
/// ```swift
/// let records = try TraceLog.read(contentsOf: "/tmp/loop.jsonl")
/// for record in records where record.record == .activity {
///   print(record.iteration, record.activity ?? "")
/// }
/// ```
public struct TraceRecord: Sendable, Hashable, Codable {
  /// The schema version this type writes.
  ///
  /// ```swift
  /// assert(record.version == TraceRecord.schemaVersion)
  /// ```
  public static let schemaVersion = 4

  /// The schema versions ``TraceLog`` reads: version 1 is version 2 without the stall and
  /// recovery records and their keys; version 2 is version 3 without the span and cause
  /// keys; version 3's `trace` is the trace id a call-out's cause came with, version 4's the
  /// one the call-out belongs to, and version 3 has no loss record.
  package static let readableVersions: ClosedRange<Int> = 1...4

  /// The schema version of the record (``schemaVersion``).
  public var version: Int
  /// The tracer's run id: every record of one ``LoopTracer`` carries the same one.
  public var run: String
  /// The record's number in its tracer, from 1: the order the loops produced them.
  public var seq: UInt64
  /// What the record describes.
  public var record: Kind
  /// When it happened (the start, for call-outs and sleeps): `CLOCK_BOOTTIME` nanoseconds.
  public var timestamp: Int64
  /// The wall-clock time of the record, nanoseconds since the Unix epoch.
  public var wallTime: Int64
  /// The process id.
  public var pid: Int32
  /// The kernel thread id (`gettid`) of the loop's thread.
  public var tid: Int32
  /// The loop thread's name.
  public var thread: String
  /// The loop's ``/RunLoopCore/EventRunLoop/id``.
  public var loop: UInt64
  /// The mode of the innermost run.
  public var mode: String
  /// The loop's pass counter.
  public var iteration: UInt64
  /// How many runs of the loop are active (1 for an outermost run).
  public var depth: Int
  /// The step of the guide's sequence of events (1 to 10, see
  /// ``/RunLoopCore/EventRunLoop/currentStep``) the loop was at: for an activity, the step it
  /// announces; for a call-out, the step that made it (9 for a timer or a descriptor, 4 for
  /// a custom source, 3 for a perform request); for a sleep, 7. Absent in logs of schema
  /// versions 1 to 3, in logs of version 4 written before steps were recorded, and in stall,
  /// recovery and loss records.
  ///
  /// ```swift
  /// let timerSteps = records.filter { $0.calloutKind == "timer" }.compactMap(\.step)
  /// ```
  public var step: Int?
  /// The activity's name (`entry`, `beforeTimers`, `beforeSources`, `beforeWaiting`,
  /// `afterWaiting`, `exit`); only in activity records.
  public var activity: String?
  /// The call-out's kind (`timer`, `source`, `block`, `port`, `observer`...).
  public var calloutKind: String?
  /// The call-out's name.
  public var calloutName: String?
  /// How long the call-out or sleep lasted, in nanoseconds.
  public var duration: Int64?
  /// When the call-out's work became due (a timer's fire date, a source's signal), as
  /// `CLOCK_BOOTTIME` nanoseconds.
  public var dueAt: Int64?
  /// How long after `dueAt` the call-out started, in nanoseconds (negative when early).
  public var lateness: Int64?
  /// The call-out's span (16 lowercase hex digits): an id unique in its process (the tracing
  /// system's span id, when `RunLoopSpans` made the call-out a span), which the `causeSpan`
  /// of the work it queued names; only in call-out records.
  ///
  /// ```swift
  /// let children = records.filter { $0.causeSpan == record.span }
  /// ```
  public var span: String?
  /// The span of the call-out that caused this one (16 hex digits; all zeros when the cause
  /// was made outside any call-out); only in call-out records of work that recorded its
  /// cause (perform requests, signalled sources, port messages, jobs).
  ///
  /// ```swift
  /// let parent = records.first { $0.span == record.causeSpan }
  /// ```
  public var causeSpan: String?
  /// The kernel thread id of the thread that caused the call-out.
  ///
  /// ```swift
  /// if record.causeTid != record.tid { print("caused from another thread") }
  /// ```
  public var causeTid: Int32?
  /// The loop whose thread caused the call-out; absent when that thread has no loop.
  ///
  /// ```swift
  /// if record.causeSpan != nil, record.causeLoop == nil { print("from a plain thread") }
  /// ```
  public var causeLoop: UInt64?
  /// The process that caused the call-out, when that is another process (a named-port
  /// message).
  ///
  /// ```swift
  /// if let sender = record.causePid { print("sent by process \(sender)") }
  /// ```
  public var causePid: Int32?
  /// The W3C trace id (32 lowercase hex digits) of the trace the call-out belongs to: the
  /// tracing system's, when `RunLoopSpans` made the call-out a span; else the one its cause
  /// came with, or the one it started by sending a named-port frame. (In version 3 logs: the
  /// one the cause came with.)
  ///
  /// ```swift
  /// let sameRequest = records.filter { $0.trace == record.trace }
  /// ```
  public var trace: String?
  /// The stalled thread's scheduling state as the kernel reported it when the stall was seen
  /// (`R` running, `S` sleeping, `D` in uninterruptible wait...); only in stall records.
  ///
  /// ```swift
  /// if record.threadState == "R" { print("spinning on the CPU") }
  /// ```
  public var threadState: String?
  /// Where in the kernel the stalled thread waited (`/proc/.../wchan`: `futex_wait_queue` for
  /// a lock, `do_epoll_wait`...), `0` when running; only in stall records. Read just after
  /// the stall was seen: a loop that went back to sleep meanwhile shows its sleep
  /// (`do_epoll_wait`, or `futex_wait_queue` for a run sleeping on its wake word).
  ///
  /// ```swift
  /// let waitingIn = record.wchan
  /// ```
  public var wchan: String?
  /// How many records were lost before this one (since the previous loss record); only in
  /// loss records, which the JSON sink writes.
  ///
  /// ```swift
  /// let lost = records.compactMap(\.lost).reduce(0, +)
  /// ```
  public var lost: UInt64?

  /// Creates a record (the tracer does this; tools and tests may too).
  ///
  /// ```swift
  /// let record = TraceRecord(
  ///   run: "r1", seq: 1, record: .activity, timestamp: 10, wallTime: 0, pid: 1, tid: 1,
  ///   thread: "main", loop: 1, mode: "default", iteration: 0, depth: 1, activity: "entry")
  /// ```
  package init(
    version: Int = TraceRecord.schemaVersion, run: String, seq: UInt64, record: Kind,
    timestamp: Int64, wallTime: Int64, pid: Int32, tid: Int32, thread: String, loop: UInt64,
    mode: String, iteration: UInt64, depth: Int, step: Int? = nil, activity: String? = nil,
    calloutKind: String? = nil, calloutName: String? = nil, duration: Int64? = nil,
    dueAt: Int64? = nil, lateness: Int64? = nil, span: String? = nil,
    causeSpan: String? = nil, causeTid: Int32? = nil, causeLoop: UInt64? = nil,
    causePid: Int32? = nil, trace: String? = nil, threadState: String? = nil,
    wchan: String? = nil, lost: UInt64? = nil
  ) {
    self.version = version
    self.run = run
    self.seq = seq
    self.record = record
    self.timestamp = timestamp
    self.wallTime = wallTime
    self.pid = pid
    self.tid = tid
    self.thread = thread
    self.loop = loop
    self.mode = mode
    self.iteration = iteration
    self.depth = depth
    self.step = step
    self.activity = activity
    self.calloutKind = calloutKind
    self.calloutName = calloutName
    self.duration = duration
    self.dueAt = dueAt
    self.lateness = lateness
    self.span = span
    self.causeSpan = causeSpan
    self.causeTid = causeTid
    self.causeLoop = causeLoop
    self.causePid = causePid
    self.trace = trace
    self.threadState = threadState
    self.wchan = wchan
    self.lost = lost
  }

  /// The JSON keys (schema version 4). The journald field of a key is `RUNLOOP_` followed by
  /// the key in upper case.
  enum CodingKeys: String, CodingKey, CaseIterable {
    case version = "v"
    case run
    case seq
    case record
    case timestamp = "ts_ns"
    case wallTime = "wall_ns"
    case pid
    case tid
    case thread
    case loop
    case mode
    case iteration
    case depth
    case step
    case activity
    case calloutKind = "callout_kind"
    case calloutName = "callout_name"
    case duration = "duration_ns"
    case dueAt = "due_ns"
    case lateness = "lateness_ns"
    case span
    case causeSpan = "cause_span"
    case causeTid = "cause_tid"
    case causeLoop = "cause_loop"
    case causePid = "cause_pid"
    case trace
    case threadState = "thread_state"
    case wchan
    case lost
  }

  /// The record as `(key, value)` pairs in schema order, values as their JSON text without
  /// quotes; absent optional keys are left out. The journald sink sends these as
  /// `RUNLOOP_<KEY>=value`.
  package var fields: [(key: String, value: String)] {
    var result: [(key: String, value: String)] = [
      ("v", String(version)), ("run", run), ("seq", String(seq)), ("record", record.rawValue),
      ("ts_ns", String(timestamp)), ("wall_ns", String(wallTime)), ("pid", String(pid)),
      ("tid", String(tid)), ("thread", thread), ("loop", String(loop)), ("mode", mode),
      ("iteration", String(iteration)), ("depth", String(depth)),
    ]
    if let step { result.append(("step", String(step))) }
    if let activity { result.append(("activity", activity)) }
    if let calloutKind { result.append(("callout_kind", calloutKind)) }
    if let calloutName { result.append(("callout_name", calloutName)) }
    if let duration { result.append(("duration_ns", String(duration))) }
    if let dueAt { result.append(("due_ns", String(dueAt))) }
    if let lateness { result.append(("lateness_ns", String(lateness))) }
    if let span { result.append(("span", span)) }
    if let causeSpan { result.append(("cause_span", causeSpan)) }
    if let causeTid { result.append(("cause_tid", String(causeTid))) }
    if let causeLoop { result.append(("cause_loop", String(causeLoop))) }
    if let causePid { result.append(("cause_pid", String(causePid))) }
    if let trace { result.append(("trace", trace)) }
    if let threadState { result.append(("thread_state", threadState)) }
    if let wchan { result.append(("wchan", wchan)) }
    if let lost { result.append(("lost", String(lost))) }
    return result
  }

  #if canImport(RunLoopCore)
    /// Fills the span keys from a call-out's span (0: none), cause and trace id (both words
    /// 0: none).
    mutating func setSpan(
      _ span: UInt64, cause: CalloutCause?, trace: (high: UInt64, low: UInt64)
    ) {
      if span != 0 { self.span = span.spanHex }
      if trace != (0, 0) { self.trace = trace.high.spanHex + trace.low.spanHex }
      guard let cause else { return }
      causeSpan = cause.span.spanHex
      causeTid = cause.threadID
      causeLoop = cause.loopID
      causePid = cause.processID
    }
  #endif

  /// When the call-out or sleep ended (`timestamp + duration`), or `timestamp`.
  ///
  /// ```swift
  /// let busy = record.endTimestamp - record.timestamp
  /// ```
  /// Saturates at `Int64.min` and `Int64.max`: a damaged log may hold any numbers.
  public var endTimestamp: Int64 { timestamp.saturatingAdding(duration ?? 0) }
}

extension Int64 {
  /// `self + other`, held at the type's bounds instead of trapping.
  package func saturatingAdding(_ other: Int64) -> Int64 {
    let (sum, overflow) = addingReportingOverflow(other)
    guard overflow else { return sum }
    return other > 0 ? .max : .min
  }

  /// `self - other`, held at the type's bounds instead of trapping.
  package func saturatingSubtracting(_ other: Int64) -> Int64 {
    let (difference, overflow) = subtractingReportingOverflow(other)
    guard overflow else { return difference }
    return other < 0 ? .max : .min
  }
}
