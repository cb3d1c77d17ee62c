import Foundation
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// The trace tools read logs written by anyone: a damaged or hand-edited log with extreme
/// times must give a result, not stop the process on an arithmetic overflow.
@Suite("Trace tools on extreme times")
struct TraceToolExtremesTests {
  private func records() -> [TraceRecord] {
    func record(_ seq: UInt64, _ kind: TraceRecord.Kind, at timestamp: Int64, duration: Int64?)
      -> TraceRecord
    {
      TraceRecord(
        run: "r", seq: seq, record: kind, timestamp: timestamp, wallTime: 0, pid: 1, tid: 7,
        thread: "t", loop: 1, mode: "default", iteration: seq, depth: 1,
        activity: kind == .activity ? "entry" : nil,
        calloutKind: kind == .callout ? "source" : nil,
        calloutName: kind == .callout ? "s" : nil, duration: duration)
    }
    return [
      record(1, .activity, at: .min, duration: nil),
      record(2, .callout, at: .max - 10, duration: .max),
      record(3, .sleep, at: 0, duration: .max),
      record(4, .callout, at: -5, duration: -.max),
    ]
  }

  @Test func endTimestampSaturatesInsteadOfOverflowing() {
    let ends = records().map(\.endTimestamp)
    #expect(ends == [.min, .max, .max, .min])
  }

  @Test func summaryTimelineAndChromeExportAcceptExtremeTimes() throws {
    let records = records()
    let summary = TraceSummary(records: records)
    #expect(summary.text.contains("loop 1"))
    let svg = TraceTimeline.svg(from: records)
    #expect(svg.hasPrefix("<svg") || svg.contains("<svg"))
    let data = try ChromeTrace.json(from: records)
    #expect(try JSONSerialization.jsonObject(with: data) is [String: Any])
  }
}
