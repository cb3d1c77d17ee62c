import Foundation
import Glibc
import RunLoopCore
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// The tracer hands the sinks of this package compact events and their writer threads build
/// the records: what they write must be exactly what the records say.
@Suite("Compact trace events")
struct TraceEventTests {
  /// A sink of records, as a user would write one: it gets whole records from the tracer.
  final class RecordingSink: TraceSink, Sendable {
    let records = GuardedState<[TraceRecord]>([])
    func enqueue(_ record: TraceRecord) { records.withLock { $0.append(record) } }
    func close() {}
  }

  @Test func eventLinesAreByteForByteTheLinesOfTheirRecords() throws {
    let strings = TraceStrings(runID: "run \"7\" \\ ü", processID: 4242)
    let sources = TraceSources()
    let source = sources.register(strings)
    let tid = EventRunLoop.current.threadID
    var events: [TraceEvent] = []
    func event(
      _ kind: TraceRecord.Kind, mode: String, kindName: String? = nil, name: String? = nil,
      configure: (inout TraceEvent) -> Void = { _ in }
    ) throws {
      var event = TraceEvent(
        kind: kind, seq: 0, timestamp: 1_000_000 + Int64(events.count), wallTime: -5,
        loop: 3, iteration: UInt64.max, depth: 2, tid: tid, thread: TraceEvent.none,
        mode: TraceEvent.none)
      event.source = source
      configure(&event)
      #expect(strings.stamp(&event, mode: mode, calloutKind: kindName, calloutName: name))
      events.append(event)
    }
    for activity in LoopActivity.sequence {
      try event(.activity, mode: "default") {
        $0.activity = activity.rawValue
        $0.step = UInt8(activity.step)
      }
    }
    // A combination (the loop reports single activities, but the encoder must not guess).
    try event(.activity, mode: "tab\there") {
      $0.activity = LoopActivity([.entry, .exit]).rawValue
    }
    try event(.callout, mode: "default", kindName: "timer", name: "quote \" back \\ bell \u{7}") {
      $0.duration = 1234
      $0.dueAt = 2_000_000  // due after it started: negative lateness
      $0.hasDue = true
      $0.step = 9
    }
    try event(.callout, mode: "line\nbreak", kindName: "observer", name: "日本語 \r") {
      $0.duration = 0
    }
    try event(.sleep, mode: "default") {
      $0.duration = Int64.max
      $0.step = 7
    }
    // Spans and causes: from a loop's call-out in another process with a trace id (which the
    // call-out then belongs to), from a plain thread (span 0, no loop), and the largest span.
    try event(.callout, mode: "default", kindName: "port", name: "inbox") {
      $0.span = 0x0123_4567_89ab_cdef
      $0.cause = CalloutCause(
        span: 0x2a, threadID: 77, loopID: 5, processID: 4243,
        traceID: (high: 0xfedc_ba98_7654_3210, low: 1))
      ($0.traceHigh, $0.traceLow) = (0xfedc_ba98_7654_3210, 1)
    }
    try event(.callout, mode: "default", kindName: "source", name: "work") {
      $0.span = .max
      $0.cause = CalloutCause(span: 0, threadID: 78)
    }
    var encoder = JSONEventEncoder(sources: sources)
    let lines = encoder.lines(events)
    let snapshot = strings.snapshot()
    let records = events.map { snapshot.record(for: $0) }
    #expect(lines == records.map(\.jsonLine).joined())
    // And the lines read back as the same records.
    #expect(try TraceLog.parse(lines) == records)
    #expect(records.map(\.seq) == Array(1...UInt64(events.count)))
    #expect(records.map(\.step) == [1, 2, 3, 6, 8, 10, nil, 9, nil, 7, nil, nil])
    #expect(records[6].activity == "entry|exit")
    #expect(records[7].lateness == 1_000_007 - 2_000_000)
    #expect(records[8].dueAt == nil && records[8].lateness == nil)
    #expect(records[10].span == "0123456789abcdef")
    #expect(records[10].causeSpan == "000000000000002a")
    #expect(records[10].causeTid == 77 && records[10].causeLoop == 5)
    #expect(records[10].causePid == 4243)
    #expect(records[10].trace == "fedcba98765432100000000000000001")
    #expect(records[11].span == "ffffffffffffffff")
    #expect(records[11].causeSpan == "0000000000000000")
    #expect(records[11].causeLoop == nil && records[11].causePid == nil)
    #expect(records[11].trace == nil)
    #expect(records[9].span == nil && records[9].causeSpan == nil)
  }

  @Test func tracerPastItsStringTableSendsWholeRecordsAndLosesNothing() throws {
    let path = temporaryPath("many-names.jsonl")
    defer { unlink(path) }
    let names = TraceStrings.capacity + 200
    let recording = RecordingSink()
    try onNewThread("names") { loop in
      let sink = try JSONLinesSink(path: path)
      let tracer = LoopTracer(sinks: [sink, recording], runID: "names")
      tracer.attach(to: loop)
      for index in 0..<names { _ = loop.perform(inModes: [.default], name: "block-\(index)") {} }
      try loop.run(mode: .default, timeout: .zero)
      tracer.close()
    }
    let records = try TraceLog.read(contentsOf: path)
    let blockNames = records.filter { $0.calloutKind == "block" }.compactMap(\.calloutName)
    #expect(blockNames == (0..<names).map { "block-\($0)" })
    // Past the table too, each block keeps the step that ran it.
    #expect(records.filter { $0.calloutKind == "block" }.allSatisfy { $0.step == 3 })
    #expect(records.map(\.seq) == Array(1...UInt64(records.count)))
    #expect(records.allSatisfy { $0.thread == "names" && $0.run == "names" })
    // A sink of records gets the same records as the JSON file, field by field.
    #expect(recording.records.withLock { $0 } == records)
  }

  /// A call-out's due time is whatever its caller passed to `withCallout`: one centuries away
  /// must give a clamped record, not an overflow trap on the loop thread (or on the writer
  /// thread, which computes the lateness again).
  @Test func callOutsDueCenturiesAwayAreTracedWithClampedTimes() throws {
    let path = temporaryPath("far-due.jsonl")
    defer { unlink(path) }
    let recording = RecordingSink()
    try onNewThread("far") { loop in
      let sink = try JSONLinesSink(path: path)
      let tracer = LoopTracer(sinks: [sink, recording], runID: "far")
      tracer.attach(to: loop)
      loop.withCallout(.timer, name: "now", dueAt: .now) {}
      loop.withCallout(.timer, name: "future", dueAt: .now + .seconds(9_223_372_000)) {}
      loop.withCallout(.timer, name: "past", dueAt: .now - .seconds(9_300_000_000)) {}
      tracer.close()
    }
    let records = try TraceLog.read(contentsOf: path)
    #expect(records == recording.records.withLock { $0 })
    let byName = Dictionary(records.map { ($0.calloutName ?? "", $0) }) { first, _ in first }
    let future = try #require(byName["future"])
    #expect(future.dueAt == Int64.max)
    #expect(future.lateness == future.timestamp - Int64.max)
    let past = try #require(byName["past"])
    #expect(try #require(past.dueAt) < past.timestamp)
    #expect(past.lateness == Int64.max)
  }

  /// The encoder and the records agree at the ends of `Int64` too.
  @Test func extremeTimesEncodeAsTheirRecords() throws {
    let strings = TraceStrings(runID: "extreme", processID: Int32.max)
    let sources = TraceSources()
    let source = sources.register(strings)
    var events: [TraceEvent] = []
    let times: [(Int64, Int64)] = [
      (.max, .min), (.min, .max), (.min, .min), (.max, 0), (0, .min), (-1, .max),
    ]
    for (timestamp, due) in times {
      var event = TraceEvent(
        kind: .callout, seq: 0, timestamp: timestamp, wallTime: .min, loop: .max,
        iteration: .max, depth: .min, tid: .min, thread: TraceEvent.none,
        mode: TraceEvent.none)
      event.source = source
      event.duration = .min
      event.dueAt = due
      event.hasDue = true
      #expect(strings.stamp(&event, mode: "m", calloutKind: "timer", calloutName: "t"))
      events.append(event)
    }
    var encoder = JSONEventEncoder(sources: sources)
    let lines = encoder.lines(events)
    let snapshot = strings.snapshot()
    let records = events.map { snapshot.record(for: $0) }
    #expect(lines == records.map(\.jsonLine).joined())
    #expect(try TraceLog.parse(lines) == records)
    #expect(records.map(\.lateness) == [.max, .min, 0, .max, .max, .min])
  }

  /// A thread's name is read once, at its first record, and stays in its trace even if the
  /// thread renames itself (the documented rule); that must hold for a thread first seen
  /// once the string table is full, whose records go whole.
  @Test func threadFirstSeenPastTheStringTableKeepsItsFirstName() throws {
    let path = temporaryPath("late-thread.jsonl")
    defer { unlink(path) }
    let recording = RecordingSink()
    let sink = try JSONLinesSink(path: path)
    let tracer = LoopTracer(sinks: [sink, recording], runID: "late-thread")
    try onNewThread("filler") { loop in
      tracer.attach(to: loop)
      for index in 0..<TraceStrings.capacity {
        _ = loop.perform(inModes: [.default], name: "block-\(index)") {}
      }
      try loop.run(mode: .default, timeout: .zero)
    }
    try onNewThread("late") { loop in
      tracer.attach(to: loop)
      _ = loop.perform(inModes: [.default], name: "before") {}
      try loop.run(mode: .default, timeout: .zero)
      let comm = open("/proc/thread-self/comm", O_WRONLY)
      #expect(comm >= 0 && write(comm, "renamed", 7) == 7)
      close(comm)
      _ = loop.perform(inModes: [.default], name: "after") {}
      try loop.run(mode: .default, timeout: .zero)
    }
    tracer.close()
    let records = try TraceLog.read(contentsOf: path)
    let late = records.filter { $0.thread != "filler" }
    #expect(late.contains { $0.calloutName == "after" })
    #expect(Set(late.map(\.thread)) == ["late"])
    #expect(recording.records.withLock { $0 } == records)
  }

  /// Swift's `==` on strings is canonical equivalence: "é" and "e" + U+0301 are equal. The
  /// trace must still carry each name byte for byte as it was given (tools such as `jq` and
  /// `grep` compare bytes or code points), so the string table must not merge them.
  @Test func canonicallyEquivalentNamesKeepTheirOwnBytes() throws {
    let path = temporaryPath("nfd.jsonl")
    defer { unlink(path) }
    let composed = "caf\u{E9}"
    let decomposed = "cafe\u{301}"
    let recording = RecordingSink()
    try onNewThread("nfd") { loop in
      let sink = try JSONLinesSink(path: path)
      let tracer = LoopTracer(sinks: [sink, recording], runID: "nfd")
      tracer.attach(to: loop)
      for name in [composed, decomposed, composed, "other", decomposed] {
        loop.withCallout(.block, name: name) {}
      }
      tracer.close()
    }
    let data = try #require(FileManager.default.contents(atPath: path))
    let names = try data.split(separator: UInt8(ascii: "\n")).map { line in
      let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any]
      return Array(((object?["callout_name"] as? String) ?? "").unicodeScalars)
    }
    let expected = [composed, decomposed, composed, "other", decomposed]
    #expect(names == expected.map { Array($0.unicodeScalars) })
    let recorded = recording.records.withLock { $0 }.compactMap(\.calloutName)
    #expect(recorded.map { Array($0.utf8) } == expected.map { Array($0.utf8) })
  }
}
