import Foundation
import Glibc
import RunLoopTracing
import Testing

/// `runloop-demo top` on logs written by anyone: extreme times, many runs, a large backlog.
@Suite("runloop-demo top on hostile logs")
struct TopExtremesTests {
  static func record(
    _ seq: UInt64, _ kind: TraceRecord.Kind, at timestamp: Int64, duration: Int64? = nil,
    run: String = "r", activity: String? = nil, lateness: Int64? = nil, thread: String = "t"
  ) -> TraceRecord {
    TraceRecord(
      run: run, seq: seq, record: kind, timestamp: timestamp, wallTime: 0, pid: 1, tid: 7,
      thread: thread, loop: 1, mode: "default", iteration: seq, depth: 1,
      activity: activity ?? (kind == .activity ? "entry" : nil),
      calloutKind: kind == .callout ? "timer" : nil, calloutName: kind == .callout ? "x" : nil,
      duration: duration, lateness: lateness)
  }

  static func write(_ records: [TraceRecord], to path: String) throws {
    let sink = try JSONLinesSink(path: path)
    for record in records { sink.enqueue(record) }
    #expect(sink.close(timeout: .seconds(10)))
  }

  @Test(arguments: [
    [record(1, .activity, at: .min), record(2, .callout, at: .max - 10, duration: .max)],
    [record(1, .activity, at: .max), record(2, .sleep, at: .min, duration: .max)],
    [record(1, .activity, at: .min), record(2, .activity, at: .max, activity: "exit")],
    [record(1, .activity, at: 0), record(2, .callout, at: 5, duration: -.max, lateness: .min)],
    [record(1, .stall, at: .min, duration: .max), record(2, .activity, at: .max)],
  ])
  func extremeTimesGiveATableNotAnArithmeticTrap(records: [TraceRecord]) throws {
    let directory = try scratchDirectory("top-extreme")
    let log = directory + "/t.jsonl"
    try Self.write(records, to: log)
    let result = try runDemo(["top", log, "--once"])
    #expect(
      result.exitedNormally && result.status == 0, "status \(result.status): \(result.stderr)")
    #expect(result.stdout.contains("2 records"))
  }

  @Test func theHeaderListsAFewRunIdsAndCountsTheRest() throws {
    let directory = try scratchDirectory("top-runs")
    let log = directory + "/t.jsonl"
    let records = (1...5_000).map {
      Self.record(UInt64($0), .activity, at: Int64($0), run: "run-\($0)")
    }
    try Self.write(records, to: log)
    let result = try runDemo(["top", log, "--once"])
    #expect(result.status == 0, "\(result.stderr)")
    let header = try #require(result.stdout.split(separator: "\n").first)
    #expect(header.count < 400, "header of \(header.count) characters")
    #expect(header.contains(" and more"), "\(header)")
    #expect(header.split(separator: ",").count == 20, "\(header)")
  }

  // A 50 MB backlog: live, top reads its last 16 MB in slices, drawing between them, and
  // --duration ends it on time instead of after the whole file.
  @Test func aLargeBacklogIsDrawnFromItsLastPartAndTheDurationHolds() throws {
    let directory = try scratchDirectory("top-backlog")
    let log = directory + "/t.jsonl"
    let thread = String(repeating: "w", count: 300)
    try Self.write(
      (1...120_000).map {
        Self.record(
          UInt64($0), .activity, at: Int64($0) * 1000, activity: "beforeTimers", thread: thread)
      }, to: log)
    let start = ContinuousClock.now
    let result = try runDemo(
      ["top", log, "--duration", "1", "--interval", "0.2"], timeout: .seconds(60))
    let elapsed = ContinuousClock.now - start
    #expect(result.exitedNormally && result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("frame 1"))
    #expect(result.stdout.contains("from the last 16 MB"))
    // Loosely: the whole file at the reader's speed takes far longer on this machine.
    #expect(elapsed < .seconds(30))
  }
}
