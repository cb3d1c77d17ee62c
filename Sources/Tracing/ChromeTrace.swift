import DequeModule
import Foundation
import Glibc
import RunLoopCore

/// Converts a trace into Chrome Trace Event JSON, which Perfetto (ui.perfetto.dev) and
/// `chrome://tracing` open.
///
/// Each run of a loop becomes a begin/end pair (`B`/`E`, named `run <mode>`), each sleep and
/// call-out a complete event (`X`, with its duration), the other activities instant events
/// (`i`), a stall an instant event where the watchdog saw it and its recovery a complete
/// event `stalled` over the time the loop was awake, and each thread's name a metadata event
/// (`M`, `thread_name`). A call-out whose record names its cause (`cause_span`, schema
/// version 3) gets a flow arrow from the causing call-out's slice: a flow start event (`s`)
/// inside the cause's slice and a flow end (`f`, bound to its enclosing slice) inside the
/// effect's, with the same `id` (one per arrow) and category `flow`, which Perfetto and
/// `chrome://tracing` draw as an arrow between the two slices, across threads. An arrow is
/// drawn only when both records are in the trace, and the cause is found among the last
/// 65,536 call-outs (so memory stays bounded). Timestamps are
/// microseconds on the trace's monotonic clock. A run still open at the end of the trace is
/// closed at the last timestamp, and an exit whose entry happened before tracing began is
/// left out, so begin and end events always balance.
///
/// ```swift
/// let records = try TraceLog.read(contentsOf: "/tmp/loop.jsonl")
/// try ChromeTrace.json(from: records).write(to: URL(fileURLWithPath: "/tmp/loop.trace.json"))
/// ```
public enum ChromeTrace {
  /// The Chrome Trace Event objects for `records`, in timestamp order per thread: what
  /// ``json(from:)`` serialises.
  package static func events(from records: [TraceRecord]) -> [[String: any Sendable]] {
    var converter = ChromeEventConverter()
    var events: [[String: any Sendable]] = []
    for record in records { converter.add(record) { events.append($0.dictionary) } }
    converter.finish { events.append($0.dictionary) }
    return events
  }

  /// Writes the Chrome Trace Event JSON document of the trace `reader` reads to the file at
  /// `path`, one event at a time: memory stays bounded whatever the trace's size (the
  /// threads' names, their open runs, and for the flow arrows at most 65,536 call-outs and
  /// as many effects waiting for their cause). Bad lines are skipped (the reader counts
  /// them). Returns how many events it wrote; ``write(from:toFileAt:)->(_,_,_)`` with this
  /// one reader also says how many arrows and how many causes were not found.
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when reading the trace or
  ///   writing the file fails, with that call's `errno`.
  ///
  /// ```swift
  /// let reader = try TraceLogReader(path: "trace.jsonl")
  /// let events = try ChromeTrace.write(from: reader, toFileAt: "trace.json")
  /// ```
  @discardableResult
  public static func write(from reader: TraceLogReader, toFileAt path: String)
    throws(RunLoopError) -> Int
  {
    try write(from: [reader], toFileAt: path).events
  }

  /// Writes one Chrome Trace Event document of several JSON logs, typically one per process
  /// (a server's and its clients'), to the file at `path`: each process is its own track
  /// (named after its pid and its log), and flow arrows join each call-out that has a cause
  /// to the call-out that caused it, in whichever log that is (matched by `cause_span` and
  /// `cause_pid`). The logs are read once each, in order, streaming, so a log can be a pipe.
  /// Bad lines are skipped and counted by each log's reader. Memory stays bounded: an arrow
  /// is drawn when its cause is among the last 65,536 call-outs read, or comes within the
  /// next 65,536 effects still waiting; the call-outs whose cause was not found either way
  /// (in none of these logs, or too far away) are counted, not drawn.
  ///
  /// - Returns: how many events it wrote, how many flow arrows among them, and how many
  ///   call-outs named a cause it did not find.
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when reading a log or
  ///   writing the file fails, with that call's `errno` (the message names the file).
  ///
  /// ```swift
  /// let logs = try ["server.jsonl", "client.jsonl"].map { try TraceLogReader(path: $0) }
  /// let result = try ChromeTrace.write(from: logs, toFileAt: "both.json")
  /// print("\(result.events) events, \(result.flows) arrows")
  /// ```
  @discardableResult
  public static func write(from readers: [TraceLogReader], toFileAt path: String)
    throws(RunLoopError) -> (events: Int, flows: Int, causesNotFound: Int)
  {
    var converter = ChromeEventConverter()
    let events = try writeDocument(toFileAt: path) { emit, failed throws(RunLoopError) in
      // One converter for all: an arrow's cause may be in any log, before or after it.
      for reader in readers {
        converter.processLabel = readers.count > 1 ? Self.fileName(reader.name) : nil
        while !failed(), let record = try reader.next() { converter.add(record, emit) }
      }
      converter.finish(emit)
    }
    return (events, converter.flows.arrows, converter.flows.causesNotFound)
  }

  /// The last component of `path`.
  private static func fileName(_ path: String) -> String {
    path.split(separator: "/").last.map(String.init) ?? path
  }

  /// Writes `{"displayTimeUnit":"ms","traceEvents":[...]}` to `path`, the events as `body`
  /// emits them, through one buffer flushed every 64 KiB. `failed` tells `body` that a write
  /// failed, so that it stops reading: nothing it converts after that is kept. Returns how
  /// many events there were.
  private static func writeDocument(
    toFileAt path: String,
    _ body: (_ emit: (ChromeEvent) -> Void, _ failed: () -> Bool) throws(RunLoopError) -> Void
  ) throws(RunLoopError) -> Int {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw RunLoopError.systemCall("open(\(path))", errno: errno) }
    defer { close(descriptor) }
    let buffer = LineBuffer()
    var count = 0
    var failure: Int32 = 0
    func flush() {
      var offset = 0
      while failure == 0, offset < buffer.count {
        let written = Glibc.write(
          descriptor, buffer.bytes.baseAddress! + offset, buffer.count - offset)
        if written < 0 {
          if errno != EINTR { failure = errno }
          continue
        }
        offset += written
      }
      buffer.removeAll()
    }
    func emit(_ event: ChromeEvent) {
      buffer.write(count == 0 ? "\n" : ",\n")
      event.appendJSON(to: buffer)
      count += 1
      if buffer.count >= 1 << 16 { flush() }
    }
    buffer.reserve(64)
    buffer.write(#"{"displayTimeUnit":"ms","traceEvents":["#)
    try body(emit) { failure != 0 }
    buffer.reserve(8)
    buffer.write("\n]}\n")
    flush()
    guard failure == 0 else { throw RunLoopError.systemCall("write(\(path))", errno: failure) }
    return count
  }

  /// The whole Chrome Trace Event JSON document (`{"traceEvents": [...]}`).
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` if serialisation fails
  ///   (it does not for records read by ``TraceLog``).
  ///
  /// ```swift
  /// let data = try ChromeTrace.json(from: records)
  /// ```
  public static func json(from records: [TraceRecord]) throws(RunLoopError) -> Data {
    let document: [String: Any] = [
      "traceEvents": events(from: records), "displayTimeUnit": "ms",
    ]
    do {
      return try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
    } catch {
      throw .invalidArgument("cannot serialise the Chrome trace: \(error)")
    }
  }

  static func microseconds(_ nanoseconds: Int64) -> Double {
    Double(nanoseconds) / 1000
  }
}

/// One Chrome Trace Event: as a dictionary (``ChromeTrace/events(from:)``) or as JSON bytes
/// (``ChromeTrace/write(from:toFileAt:)``), from the same fields.
struct ChromeEvent {
  enum Value {
    case int(Int)
    case double(Double)
    case string(String)

    var sendable: any Sendable {
      switch self {
      case .int(let value): value
      case .double(let value): value
      case .string(let value): value
      }
    }
  }

  // In the order written.
  var fields: [(String, Value)]
  var args: [(String, Value)]?

  var dictionary: [String: any Sendable] {
    var result: [String: any Sendable] = [:]
    for (key, value) in fields { result[key] = value.sendable }
    if let args {
      var nested: [String: any Sendable] = [:]
      for (key, value) in args { nested[key] = value.sendable }
      result["args"] = nested
    }
    return result
  }

  func appendJSON(to buffer: LineBuffer) {
    func append(_ pairs: [(String, Value)]) {
      for (index, (key, value)) in pairs.enumerated() {
        if index > 0 { buffer.write(UInt8(ascii: ",")) }
        buffer.writeQuoted(key)
        buffer.reserve(40)
        buffer.write(UInt8(ascii: ":"))
        switch value {
        case .int(let number): buffer.writeDecimal(Int64(number))
        case .double(let number): buffer.write(Array(Self.json(number).utf8))
        case .string(let text): buffer.writeQuoted(text)
        }
      }
    }
    buffer.reserve(8)
    buffer.write(UInt8(ascii: "{"))
    append(fields)
    if let args {
      buffer.reserve(16)
      buffer.write(#","args":{"#)
      append(args)
      buffer.reserve(8)
      buffer.write(UInt8(ascii: "}"))
    }
    buffer.reserve(8)
    buffer.write(UInt8(ascii: "}"))
  }

  /// A finite number as JSON (integral values without a fraction).
  static func json(_ number: Double) -> String {
    guard number.isFinite else { return "0" }
    if number == number.rounded(), abs(number) < 1e15 { return String(Int64(number)) }
    return "\(number)"
  }
}

/// Turns records into Chrome Trace Events one at a time, keeping only the threads named so
/// far, each thread's open runs and, for the flow arrows, a bounded window of call-outs.
struct ChromeEventConverter {
  /// When set, each process gets a `process_name` event: `pid N: LABEL` (the log's file
  /// name, when several logs are exported together).
  var processLabel: String?
  private var namedProcesses = Set<Int32>()
  private var named = Set<Int32>()
  private var open: [Int32: [Int32]] = [:]  // tid: the pid of each open run
  private var lastTimestamp: [Int32: Int64] = [:]
  /// The arrows drawn, and the call-outs whose cause was not found, so far.
  private(set) var flows = CauseFlows()

  mutating func add(_ record: TraceRecord, _ emit: (ChromeEvent) -> Void) {
    let pid = Int(record.pid)
    let tid = Int(record.tid)
    if let processLabel, namedProcesses.insert(record.pid).inserted {
      emit(
        ChromeEvent(
          fields: [("ph", .string("M")), ("name", .string("process_name")), ("pid", .int(pid))],
          args: [("name", .string("pid \(pid): \(processLabel)"))]))
    }
    if named.insert(record.tid).inserted {
      emit(
        ChromeEvent(
          fields: [
            ("ph", .string("M")), ("name", .string("thread_name")), ("pid", .int(pid)),
            ("tid", .int(tid)),
          ],
          args: [("name", .string("\(record.thread) (loop \(record.loop))"))]))
    }
    lastTimestamp[record.tid] = max(lastTimestamp[record.tid] ?? 0, record.endTimestamp)
    let base: [(String, ChromeEvent.Value)] = [
      ("pid", .int(pid)), ("tid", .int(tid)),
      ("ts", .double(ChromeTrace.microseconds(record.timestamp))),
    ]
    var args: [(String, ChromeEvent.Value)] = [
      ("loop", .int(Int(clamping: record.loop))), ("mode", .string(record.mode)),
      ("iteration", .int(Int(clamping: record.iteration))), ("depth", .int(record.depth)),
      ("seq", .int(Int(clamping: record.seq))),
    ]
    if let step = record.step { args.append(("step", .int(step))) }
    switch record.record {
    case .activity where record.activity == "entry":
      open[record.tid, default: []].append(record.pid)
      emit(
        ChromeEvent(
          fields: [
            ("ph", .string("B")), ("name", .string("run \(record.mode)")), ("cat", .string("run")),
          ]
            + base, args: args))
    case .activity where record.activity == "exit":
      guard open[record.tid]?.popLast() != nil else { return }
      emit(
        ChromeEvent(fields: [("ph", .string("E")), ("cat", .string("run"))] + base, args: args))
    case .activity:
      emit(
        ChromeEvent(
          fields: [
            ("ph", .string("i")), ("s", .string("t")),
            ("name", .string(record.activity ?? "activity")), ("cat", .string("activity")),
          ] + base, args: args))
    case .callout:
      if let lateness = record.lateness {
        args.append(("lateness_us", .double(ChromeTrace.microseconds(lateness))))
      }
      if let span = record.span { args.append(("span", .string(span))) }
      if let cause = record.causeSpan { args.append(("cause_span", .string(cause))) }
      if let causePid = record.causePid { args.append(("cause_pid", .int(Int(causePid)))) }
      if let trace = record.trace { args.append(("trace", .string(trace))) }
      emit(
        ChromeEvent(
          fields: [
            ("ph", .string("X")),
            ("name", .string("\(record.calloutKind ?? "callout"): \(record.calloutName ?? "")")),
            ("cat", .string("callout")),
            ("dur", .double(ChromeTrace.microseconds(record.duration ?? 0))),
          ] + base, args: args))
      flows.add(record) { arrow in
        emit(arrow.event(phase: "s", at: arrow.cause))
        emit(arrow.event(phase: "f", at: arrow.effect))
      }
    case .sleep:
      emit(
        ChromeEvent(
          fields: [
            ("ph", .string("X")), ("name", .string("sleep")), ("cat", .string("sleep")),
            ("dur", .double(ChromeTrace.microseconds(record.duration ?? 0))),
          ] + base, args: args))
    case .stall:
      // Where the watchdog saw it, naming the call-out the loop was in.
      if let state = record.threadState { args.append(("thread_state", .string(state))) }
      if let wchan = record.wchan { args.append(("wchan", .string(wchan))) }
      args.append(("awake_ms", .double(Double(record.duration ?? 0) / 1e6)))
      emit(
        ChromeEvent(
          fields: [
            ("ph", .string("i")), ("s", .string("t")),
            ("name", .string("stall: \(record.calloutKind ?? "-") \(record.calloutName ?? "")")),
            ("cat", .string("stall")), ("pid", .int(pid)), ("tid", .int(tid)),
            ("ts", .double(ChromeTrace.microseconds(record.endTimestamp))),
          ], args: args))
    case .loss:
      // The log's writer lost records here: a mark on the writer's thread.
      args.append(("lost", .int(Int(clamping: record.lost ?? 0))))
      emit(
        ChromeEvent(
          fields: [
            ("ph", .string("i")), ("s", .string("p")),
            ("name", .string("\(record.lost ?? 0) records lost")), ("cat", .string("loss")),
          ] + base, args: args))
    case .recovery:
      // The whole time the loop was awake, from waking to sleeping again.
      emit(
        ChromeEvent(
          fields: [
            ("ph", .string("X")), ("name", .string("stalled")), ("cat", .string("stall")),
            ("dur", .double(ChromeTrace.microseconds(record.duration ?? 0))),
          ] + base, args: args))
    }
  }

  /// Closes the runs the trace ended inside of.
  mutating func finish(_ emit: (ChromeEvent) -> Void) {
    for (tid, pids) in open {
      for pid in pids.reversed() {
        emit(
          ChromeEvent(
            fields: [
              ("ph", .string("E")), ("cat", .string("run")), ("pid", .int(Int(pid))),
              ("tid", .int(Int(tid))),
              ("ts", .double(ChromeTrace.microseconds(lastTimestamp[tid] ?? 0))),
            ], args: nil))
      }
    }
    open.removeAll()
  }
}

/// Pairs call-outs with the call-outs they caused, as records arrive in log order (a cause's
/// record may come before or after its effects': a record is made when its call-out ends),
/// in bounded memory: the last `limit` call-outs, and as many effects waiting for a cause
/// not seen yet.
struct CauseFlows {
  /// A call-out in a process: what an effect's `cause_span` (and `cause_pid`) names.
  struct Key: Hashable {
    let pid: Int32
    let span: String

    /// The call-out `record` is, if it has a span.
    init?(spanOf record: TraceRecord) {
      guard let span = record.span else { return nil }
      self.init(pid: record.pid, span: span)
    }

    /// The call-out `record` names as its cause (in its own process unless it names
    /// another), if it names one: a cause span of zeros means work made outside any
    /// call-out, with no slice to start an arrow from.
    init?(causeOf record: TraceRecord) {
      guard let span = record.causeSpan, span != CauseFlows.noSpan else { return nil }
      self.init(pid: record.causePid ?? record.pid, span: span)
    }

    init(pid: Int32, span: String) {
      self.pid = pid
      self.span = span
    }
  }

  /// A point inside a call-out's slice where a flow event binds to it: a little after its
  /// start (half its length, at most 0.5 µs), so that it falls inside the slice after the
  /// microsecond rounding of both, and before any call-out nested in it.
  struct Anchor {
    let pid: Int32
    let tid: Int32
    let timestamp: Int64

    init(_ record: TraceRecord) {
      pid = record.pid
      tid = record.tid
      timestamp = record.timestamp.saturatingAdding(min((record.duration ?? 0) / 2, 500))
    }
  }

  /// One arrow: its number in the trace, from the cause to the effect.
  struct Arrow {
    let id: Int
    let cause: Anchor
    let effect: Anchor

    func event(phase: String, at anchor: Anchor) -> ChromeEvent {
      var fields: [(String, ChromeEvent.Value)] = [
        ("ph", .string(phase)), ("id", .int(id)), ("name", .string("cause")),
        ("cat", .string("flow")), ("pid", .int(Int(anchor.pid))), ("tid", .int(Int(anchor.tid))),
        ("ts", .double(ChromeTrace.microseconds(anchor.timestamp))),
      ]
      if phase == "f" { fields.append(("bp", .string("e"))) }
      return ChromeEvent(fields: fields, args: nil)
    }
  }

  let limit: Int
  private var callouts: [Key: Anchor] = [:]
  private var calloutOrder = Deque<Key>()
  private var waiting: [Key: [Anchor]] = [:]
  private var waitingOrder = Deque<Key>()
  private var waitingCount = 0
  /// Arrows drawn so far.
  private(set) var arrows = 0
  // Effects dropped from the waiting list before their cause came.
  private var evicted = 0

  /// Call-outs that named a cause not seen (yet): still waiting, or dropped from the list of
  /// those waiting, which holds at most `limit`.
  var causesNotFound: Int { waitingCount + evicted }

  init(limit: Int = 65_536) {
    self.limit = limit
  }

  /// Takes a call-out record; calls `draw` for each arrow it completes (to it from its cause,
  /// from it to effects seen before it).
  mutating func add(_ record: TraceRecord, draw: (Arrow) -> Void) {
    let anchor = Anchor(record)
    if let cause = Key(causeOf: record) {
      if let found = callouts[cause] {
        arrows += 1
        draw(Arrow(id: arrows, cause: found, effect: anchor))
      } else {
        wait(anchor, for: cause)
      }
    }
    guard let key = Key(spanOf: record) else { return }
    if let effects = waiting.removeValue(forKey: key) {
      waitingCount -= effects.count
      for effect in effects {
        arrows += 1
        draw(Arrow(id: arrows, cause: anchor, effect: effect))
      }
    }
    if callouts.updateValue(anchor, forKey: key) == nil {
      calloutOrder.append(key)
      if calloutOrder.count > limit, let oldest = calloutOrder.popFirst() {
        callouts[oldest] = nil
      }
    }
  }

  private mutating func wait(_ effect: Anchor, for cause: Key) {
    if waiting[cause, default: []].isEmpty { waitingOrder.append(cause) }
    waiting[cause, default: []].append(effect)
    waitingCount += 1
    while waitingCount > limit, let oldest = waitingOrder.popFirst() {
      let dropped = waiting.removeValue(forKey: oldest)?.count ?? 0
      waitingCount -= dropped
      evicted += dropped
    }
    // Keys whose cause came are still listed; drop them before the list outgrows the limit.
    if waitingOrder.count > 2 * limit {
      waitingOrder = Deque(waitingOrder.filter { waiting[$0] != nil })
    }
  }

  /// The cause span of work made outside any call-out: no slice to start an arrow from.
  static let noSpan = "0000000000000000"
}
