import RunLoopCore

/// Writes a tracer's ``TraceEvent`` values as JSON lines without building a
/// ``TraceRecord`` first: each string of the tracer's table is quoted once and its bytes
/// copied into every line that names it. The bytes are exactly those of
/// `TraceRecord.appendJSONLine(to:)` for the record the event stands for (a test compares
/// them). Used on one sink's writer thread only.
///
/// The writer thread encodes every record, and on a 2-core machine its time is taken from
/// the traced loop: hence plain pointer writes, and no reference counting per event.
package struct JSONEventEncoder {
  private let sources: TraceSources
  // By source number; `nil` for a number not seen yet or released.
  private var bySource: [QuotedTable?] = []

  package init(sources: TraceSources) {
    self.sources = sources
  }

  /// Appends the line of `event` to `buffer`; `false` (nothing appended) when no table has
  /// the event's source number, which the ordering of releases rules out.
  @discardableResult
  mutating func append(_ event: TraceEvent, to buffer: LineBuffer) -> Bool {
    let index = Int(event.source)
    if index < bySource.count, let table = bySource[index] {
      table.encode(event, to: buffer)
      return true
    }
    guard let strings = sources.table(event.source) else { return false }
    if index >= bySource.count {
      bySource.append(contentsOf: repeatElement(nil, count: index + 1 - bySource.count))
    }
    let table = QuotedTable(strings)
    bySource[index] = table
    table.encode(event, to: buffer)
    return true
  }

  /// The run id of the tracer whose events carry `source`, once one of them was encoded.
  func runID(of source: UInt32) -> String? {
    Int(source) < bySource.count ? bySource[Int(source)]?.runID : nil
  }

  /// Forgets the quoted strings of `source` (freeing them) and releases its table; the
  /// number may then come back for another tracer.
  mutating func release(_ source: UInt32) {
    if Int(source) < bySource.count { bySource[Int(source)] = nil }
    sources.release(source)
  }

  /// The lines of `items` (events and releases), for tests.
  package mutating func lines(_ items: [TraceItem]) -> String {
    let buffer = LineBuffer()
    for item in items {
      switch item {
      case .event(let event): append(event, to: buffer)
      case .record(let record): record.appendJSONLine(to: buffer)
      case .release(let source): release(source)
      case .reopen: break
      }
    }
    return String(decoding: buffer.bytes, as: UTF8.self)
  }

  /// The lines of `events`, for tests.
  package mutating func lines(_ events: [TraceEvent]) -> String {
    lines(events.map { .event($0) })
  }
}

/// One tracer's strings, quoted, and the parts of a line that are the same for all its
/// records; on the writer thread only. Each piece is its own allocation, owned by the table
/// (freed in `deinit`), so that encoding a line copies bytes from fixed addresses into the
/// ``LineBuffer`` with no reference counting or bounds checks per piece.
final class QuotedTable {
  private let table: TraceStrings
  /// The tracer's run id.
  var runID: String { table.runID }
  // `{"v":1,"run":"<run id>","seq":`
  private let head: UnsafeMutableBufferPointer<UInt8>
  // `,"pid":<pid>,"tid":`
  private let pid: UnsafeMutableBufferPointer<UInt8>
  // The quoted strings by id, each in its own allocation (freed with the table).
  private var quoted: [UnsafeMutableBufferPointer<UInt8>] = []
  // The six activities' names, quoted; allocated once for the process and never written
  // after, so sharing the pointers between threads is safe (hence `nonisolated(unsafe)`).
  nonisolated(unsafe) private static let activityNames:
    [(rawValue: UInt32, quoted: UnsafeMutableBufferPointer<UInt8>)] =
      LoopActivity.sequence.map { ($0.rawValue, copy(LineBuffer.quoted($0.name))) }

  init(_ table: TraceStrings) {
    self.table = table
    let buffer = LineBuffer(capacity: 256)
    buffer.write(#"{"v":"#)
    buffer.writeDecimal(Int64(TraceRecord.schemaVersion))
    buffer.write(#","run":"#)
    buffer.writeQuoted(table.runID)
    buffer.reserve(64)
    buffer.write(#","seq":"#)
    head = Self.copy(buffer.bytes)
    buffer.removeAll()
    buffer.write(#","pid":"#)
    buffer.writeDecimal(Int64(table.processID))
    buffer.write(#","tid":"#)
    pid = Self.copy(buffer.bytes)
  }

  deinit {
    head.deallocate()
    pid.deallocate()
    for bytes in quoted { bytes.deallocate() }
  }

  private static func copy(_ bytes: some Collection<UInt8>) -> UnsafeMutableBufferPointer<UInt8> {
    let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
    _ = copy.initialize(from: bytes)
    return copy
  }

  /// The quoted bytes of string `id` (ids only grow: a new one means new strings).
  private func fragment(_ id: UInt32) -> UnsafeBufferPointer<UInt8> {
    if Int(id) >= quoted.count {
      let strings = table.snapshot().strings
      for string in strings[quoted.count...] {
        quoted.append(Self.copy(LineBuffer.quoted(string)))
      }
    }
    return UnsafeBufferPointer(quoted[Int(id)])
  }

  /// The span keys of a call-out, as `TraceRecord.setSpan(_:cause:trace:)` fills them.
  private static func writeSpan(_ event: TraceEvent, to line: inout LineCursor) {
    if event.span != 0 {
      line.write(#","span":""#)
      line.writeHex16(event.span)
      line.write(#"""#)
    }
    if let cause = event.cause {
      line.write(#","cause_span":""#)
      line.writeHex16(cause.span)
      line.write(#"","cause_tid":"#)
      line.writeDecimal(Int64(cause.threadID))
      if let loop = cause.loopID {
        line.write(#","cause_loop":"#)
        line.writeDecimal(loop)
      }
      if let pid = cause.processID {
        line.write(#","cause_pid":"#)
        line.writeDecimal(Int64(pid))
      }
    }
    if event.traceHigh != 0 || event.traceLow != 0 {
      line.write(#","trace":""#)
      line.writeHex16(event.traceHigh)
      line.writeHex16(event.traceLow)
      line.write(#"""#)
    }
  }

  func encode(_ event: TraceEvent, to buffer: LineBuffer) {
    let thread = fragment(event.thread)
    let mode = fragment(event.mode)
    let kind = event.calloutKind == TraceEvent.none ? nil : fragment(event.calloutKind)
    let name = event.calloutName == TraceEvent.none ? nil : fragment(event.calloutName)
    var activity: UnsafeBufferPointer<UInt8>?
    var otherActivity: UnsafeMutableBufferPointer<UInt8>?  // a combination: not in the list
    defer { otherActivity?.deallocate() }
    if event.kind == .activity {
      if let known = Self.activityNames.first(where: { $0.rawValue == event.activity }) {
        activity = UnsafeBufferPointer(known.quoted)
      } else {
        otherActivity = Self.copy(LineBuffer.quoted(TraceStrings.activityName(event.activity)))
        activity = otherActivity.map { UnsafeBufferPointer($0) }
      }
    }
    let head = UnsafeBufferPointer(self.head)
    let pid = UnsafeBufferPointer(self.pid)
    // Room for the rest: the keys, at most 20 bytes per number.
    let room =
      head.count + pid.count + thread.count + mode.count + (kind?.count ?? 0)
      + (name?.count ?? 0) + (activity?.count ?? 0) + 768
    buffer.withCursor(reserving: room) { line in
      line.write(head)
      line.writeDecimal(event.seq)
      switch event.kind {
      case .activity: line.write(#","record":"activity","ts_ns":"#)
      case .callout: line.write(#","record":"callout","ts_ns":"#)
      case .sleep: line.write(#","record":"sleep","ts_ns":"#)
      case .stall: line.write(#","record":"stall","ts_ns":"#)
      case .recovery: line.write(#","record":"recovery","ts_ns":"#)
      case .loss: line.write(#","record":"loss","ts_ns":"#)
      }
      line.writeDecimal(event.timestamp)
      line.write(#","wall_ns":"#)
      line.writeDecimal(event.wallTime)
      line.write(pid)
      line.writeDecimal(Int64(event.tid))
      line.write(#","thread":"#)
      line.write(thread)
      line.write(#","loop":"#)
      line.writeDecimal(event.loop)
      line.write(#","mode":"#)
      line.write(mode)
      line.write(#","iteration":"#)
      line.writeDecimal(event.iteration)
      line.write(#","depth":"#)
      line.writeDecimal(Int64(event.depth))
      if event.step != 0 {
        line.write(#","step":"#)
        line.writeDecimal(Int64(event.step))
      }
      switch event.kind {
      case .activity:
        line.write(#","activity":"#)
        if let activity { line.write(activity) }
      case .callout, .stall, .recovery:
        if let kind {
          line.write(#","callout_kind":"#)
          line.write(kind)
        }
        if let name {
          line.write(#","callout_name":"#)
          line.write(name)
        }
        line.write(#","duration_ns":"#)
        line.writeDecimal(event.duration)
        if event.hasDue {
          line.write(#","due_ns":"#)
          line.writeDecimal(event.dueAt)
          line.write(#","lateness_ns":"#)
          line.writeDecimal(event.lateness)
        }
        if event.kind == .callout { Self.writeSpan(event, to: &line) }
      case .sleep:
        line.write(#","duration_ns":"#)
        line.writeDecimal(event.duration)
      case .loss:
        // Never an event: the JSON sink writes its loss records as records.
        break
      }
      line.write("}\n")
    }
  }
}
