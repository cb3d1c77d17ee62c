import Foundation
import RunLoopCore
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// Flow arrows of the Chrome export of several logs: from a cause's call-out to its effect's,
/// matched by `cause_span` and `cause_pid` (or the record's own `pid`) across the logs.
@Suite("Chrome export of several logs")
struct ChromeFlowTests {
  static func callout(
    pid: Int32, seq: UInt64, at timestamp: Int64, name: String, span: String,
    causeSpan: String? = nil, causePid: Int32? = nil, trace: String? = nil
  ) -> TraceRecord {
    TraceRecord(
      run: "r\(pid)", seq: seq, record: .callout, timestamp: timestamp, wallTime: 0, pid: pid,
      tid: pid, thread: "t", loop: 1, mode: "default", iteration: 1, depth: 1,
      calloutKind: "port", calloutName: name, duration: 1_000, span: span, causeSpan: causeSpan,
      causeTid: causeSpan == nil ? nil : 0, causePid: causePid, trace: trace)
  }

  static func write(_ records: [TraceRecord], to path: String) throws {
    try records.map(\.jsonLine).joined().write(toFile: path, atomically: false, encoding: .utf8)
  }

  // A full disk (here /dev/full) fails the first flush: the export says so and stops
  // reading, instead of converting the rest of the logs for nothing.
  @Test func anExportWhoseWriteFailsStopsReadingAndThrows() throws {
    let directory = NSTemporaryDirectory() + "chrome-full-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = directory + "/big.jsonl"
    try Self.write(
      (1...20_000).map {
        Self.callout(
          pid: 10, seq: UInt64($0), at: Int64($0) * 1_000, name: "c\($0)",
          span: String(format: "%016x", $0))
      }, to: log)
    let reader = try TraceLogReader(path: log)
    let error = #expect(throws: RunLoopError.self) {
      try ChromeTrace.write(from: [reader], toFileAt: "/dev/full")
    }
    #expect(error?.message.contains("write(/dev/full)") == true)
    // 64 KiB of events is a few hundred records: far from all of them.
    #expect(reader.records < 2_000, "read \(reader.records) of 20,000 records")
  }

  @Test func arrowsJoinCausesToEffectsAcrossLogsAndSkipCausesInNoLog() throws {
    let directory = NSTemporaryDirectory() + "chrome-flows-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    // The client (pid 10) sends from `send`; the server (pid 20) handles it, queues work for
    // itself, and also names a cause that is in no log.
    let client = directory + "/client.jsonl"
    let server = directory + "/server.jsonl"
    try Self.write(
      [Self.callout(pid: 10, seq: 1, at: 1_000, name: "send", span: "00000000000000a1")],
      to: client)
    try Self.write(
      [
        Self.callout(
          pid: 20, seq: 1, at: 5_000, name: "svc.request", span: "00000000000000b1",
          causeSpan: "00000000000000a1", causePid: 10, trace: trace),
        Self.callout(
          pid: 20, seq: 2, at: 9_000, name: "later", span: "00000000000000b2",
          causeSpan: "00000000000000b1"),
        Self.callout(
          pid: 20, seq: 3, at: 12_000, name: "orphan", span: "00000000000000b3",
          causeSpan: "00000000000000ff", causePid: 10),
        Self.callout(
          pid: 20, seq: 4, at: 13_000, name: "unqueued", span: "00000000000000b4",
          causeSpan: "0000000000000000"),
      ], to: server)
    let out = directory + "/both.json"
    let logs = try [server, client].map { try TraceLogReader(path: $0) }
    let result = try ChromeTrace.write(from: logs, toFileAt: out)
    #expect(result.flows == 2)
    // The orphan names a cause in no log: counted, not drawn.
    #expect(result.causesNotFound == 1)
    #expect(logs.map(\.records) == [4, 1])

    let document = try JSONSerialization.jsonObject(
      with: Data(contentsOf: URL(fileURLWithPath: out)))
    let events = try #require((document as? [String: Any])?["traceEvents"] as? [[String: Any]])
    #expect(result.events == events.count)
    let starts = events.filter { $0["ph"] as? String == "s" }
    let finishes = events.filter { $0["ph"] as? String == "f" }
    #expect(starts.count == 2 && finishes.count == 2)
    func arrow(from: (pid: Int, ts: Double), to: (pid: Int, ts: Double)) -> [String: Any]? {
      let start = starts.first { $0["pid"] as? Int == from.pid && $0["ts"] as? Double == from.ts }
      return finishes.first {
        $0["id"] as? Int == start?["id"] as? Int && $0["pid"] as? Int == to.pid
          && $0["ts"] as? Double == to.ts && $0["bp"] as? String == "e"
      }
    }
    // Flow events bind 0.5 µs into their slices (half of each 1 µs call-out). Across
    // processes, though the server's log came first; within the server, from the handler.
    #expect(arrow(from: (10, 1.5), to: (20, 5.5)) != nil)
    #expect(arrow(from: (20, 5.5), to: (20, 9.5)) != nil)
    // The handler's slice names its cause's process and the trace.
    let handler = events.first { $0["name"] as? String == "port: svc.request" }
    let handlerArgs = handler?["args"] as? [String: Any]
    #expect(handlerArgs?["trace"] as? String == trace)
    #expect(handlerArgs?["cause_pid"] as? Int == 10)
    // A track per process, named after its log.
    let names = events.filter { $0["name"] as? String == "process_name" }
      .compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
    #expect(names.sorted() == ["pid 10: client.jsonl", "pid 20: server.jsonl"])
  }
}
