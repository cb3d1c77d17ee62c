import Foundation
import Glibc
import RunLoopTracing
import Testing

/// `trace summary`'s memory is bounded by its tables, whatever the log holds: many loop ids,
/// many call-out kinds, a name per call-out. What does not fit is folded, counted and shown.
@Suite("runloop-demo trace summary: bounded tables")
struct TraceSummaryBoundsTests {
  /// A timer call-out with a lateness (each new loop or kind wants histograms of its own).
  static func callout(_ seq: Int, loop: UInt64, kind: String, name: String) -> TraceRecord {
    TraceRecord(
      run: "bounds", seq: UInt64(seq), record: .callout, timestamp: Int64(seq) * 1_000,
      wallTime: 0, pid: 1, tid: 2, thread: "t", loop: loop, mode: "default", iteration: 1,
      depth: 1, calloutKind: kind, calloutName: name, duration: 500, dueAt: Int64(seq) * 1_000,
      lateness: Int64(seq % 977) * 1_000)
  }

  static func writeLog(_ name: String, _ records: [TraceRecord]) throws -> String {
    let path = try scratchDirectory(name) + "/trace.jsonl"
    try Data(records.map(\.jsonLine).joined().utf8).write(to: URL(fileURLWithPath: path))
    return path
  }

  static func baseline() throws -> Int {
    let small = try writeLog(
      "bounds-small", (1...30).map { callout($0, loop: 1, kind: "timer", name: "n") })
    let run = try TraceToolStreamingTests.peakResidentKilobytes(["trace", "summary", small])
    #expect(run.status == 0)
    return run.kilobytes
  }

  /// Runs `trace summary` on `log`, checking its peak memory against a 30-record log's.
  static func summariseInBoundedMemory(_ log: String) throws -> DemoResult {
    let base = try baseline()
    let run = try TraceToolStreamingTests.peakResidentKilobytes(["trace", "summary", log])
    #expect(run.status == 0)
    #expect(run.kilobytes - base < 100_000, "\(run.kilobytes) KiB, \(base) KiB for 30 records")
    let result = try runDemo(["trace", "summary", log], timeout: .seconds(120))
    #expect(result.status == 0, "\(result.stderr)")
    return result
  }

  @Test func twentyThousandLoopIdsStayInBoundedMemoryAndTheFoldedLoopsAreCounted() throws {
    let log = try Self.writeLog(
      "bounds-loops",
      (1...40_000).map { Self.callout($0, loop: UInt64($0 % 20_000) + 1, kind: "timer", name: "n") }
    )
    let result = try Self.summariseInBoundedMemory(log)
    let limit = TraceSummary.Builder.loopLimit
    #expect(
      result.stdout.contains(
        "\(20_000 - limit) more loops (\(40_000 - 2 * limit) records) not summarised"),
      "\(result.stdout.suffix(400))")
  }

  @Test func threeThousandCalloutKindsStayInBoundedMemoryAndTheFoldedOnesAreCounted() throws {
    let log = try Self.writeLog(
      "bounds-kinds",
      (1...30_000).map { Self.callout($0, loop: 1, kind: "k\($0 % 3_000)", name: "job-\($0)") })
    let result = try Self.summariseInBoundedMemory(log)
    #expect(result.stdout.contains("  delay (other kinds):"), "\(result.stdout.prefix(2000))")
    #expect(
      result.stdout.contains("call-outs under names past the first"),
      "\(result.stdout.prefix(2000))")
  }
}
