import Foundation
import RunLoopObservers
import Testing

/// Flow arrows of the Chrome export: from a cause's call-out to its effect's, matched by
/// `cause_span` and `cause_pid` (or the record's own `pid`) across every log exported together.
@Suite("Chrome export flow arrows")
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
    let result = try ChromeTrace.write(fromLogsAt: [server, client], toFileAt: out)
    #expect(result.flows == 2)
    #expect(result.logs.map(\.records) == [4, 1])

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
    // Across processes, with the trace id; within the server, from the handler.
    let crossing = arrow(from: (10, 1.0), to: (20, 5.0))
    #expect((crossing?["args"] as? [String: Any])?["trace"] as? String == trace)
    #expect(arrow(from: (20, 5.0), to: (20, 9.0)) != nil)
    // A track per process, named after its log.
    let names = events.filter { $0["name"] as? String == "process_name" }
      .compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
    #expect(names.sorted() == ["pid 10: client.jsonl", "pid 20: server.jsonl"])
  }

  @Test func theInMemoryExportDrawsTheSameArrows() {
    let records = [
      Self.callout(pid: 1, seq: 1, at: 1_000, name: "a", span: "0000000000000001"),
      Self.callout(
        pid: 1, seq: 2, at: 3_000, name: "b", span: "0000000000000002",
        causeSpan: "0000000000000001"),
    ]
    let events = ChromeTrace.events(from: records)
    let flows = events.filter { $0["cat"] as? String == "flow" }
    #expect(flows.map { $0["ph"] as? String } == ["s", "f"])
    #expect(flows.map { $0["ts"] as? Double } == [1.0, 3.0])
    #expect(flows[0]["id"] as? Int == flows[1]["id"] as? Int)
  }
}
