import Foundation
import RunLoopTracing
import Testing

@Suite("runloop-demo run --stall-threshold")
struct StallCommandTests {
  @Test(.enabled(if: journaldAvailable, "no journald could be started"))
  func aStalledHeartbeatIsReportedInTheJSONLogAndToJournaldAsAWarning() throws {
    let directory = try scratchDirectory("stall")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let identifier = "runloop-stall-run-\(UInt32.random(in: 0...UInt32.max))"
    let result = try runDemo(
      [
        "run", "--workers", "1", "--duration", "1.5", "--stall-threshold", "150ms",
        "--inject-stall", "450ms", "--identifier", identifier,
      ], directory: directory)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("stall watchdog: loops awake over 150.0 ms"))
    let records = try TraceLog.read(contentsOf: directory + "/runloop-trace.jsonl")
    let stalls = records.filter { $0.record == .stall }
    let recoveries = records.filter { $0.record == .recovery }
    try #require(stalls.count == 1 && recoveries.count == 1, "\(stalls) \(recoveries)")
    #expect(stalls[0].calloutKind == "timer" && stalls[0].calloutName == "heartbeat")
    #expect(stalls[0].thread == "runloop-demo" && stalls[0].loop == 1)
    #expect((recoveries[0].duration ?? 0) >= 450_000_000)
    let run = stalls[0].run
    var entries: [[String: String]] = []
    #expect(
      eventually(10) {
        entries =
          (try? journalEntries([
            "-t", identifier, "RUNLOOP_RUN=\(run)", "PRIORITY=4", "RUNLOOP_RECORD=stall",
          ])) ?? []
        return !entries.isEmpty
      })
    #expect(entries.count == 1)
    #expect(entries.first?["RUNLOOP_CALLOUT_NAME"] == "heartbeat")
    #expect(entries.first?["RUNLOOP_SEQ"] == String(stalls[0].seq))
  }
}
