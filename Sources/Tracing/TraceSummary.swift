import Histogram

/// A summary of a trace per loop: iterations, share of time asleep, utilization (busy over
/// busy plus asleep, in runs), the delay of each kind of call-out from its due time, stalls,
/// the call-outs that took the most time, and timer lateness.
///
/// ```swift
/// let summary = TraceSummary(records: try TraceLog.read(contentsOf: "/tmp/loop.jsonl"))
/// print(summary.text)
/// ```
public struct TraceSummary: Sendable, Hashable {
  /// The loops, by id.
  ///
  /// ```swift
  /// let loops = TraceSummary(records: records).loops
  /// ```
  public var loops: [Loop]
  /// Loops past the first ``Builder/loopLimit``, not summarised (counted up to
  /// ``Builder/foldedLoopCountLimit``, past which this is a lower bound).
  ///
  /// ```swift
  /// let more = summary.loopsNotSummarised
  /// ```
  public var loopsNotSummarised: Int = 0
  /// The records of those loops.
  ///
  /// ```swift
  /// let records = summary.recordsNotSummarised
  /// ```
  public var recordsNotSummarised: Int = 0
  /// Records the log's writer lost, as its loss records count them (they belong to no loop).
  ///
  /// ```swift
  /// if summary.recordsLost > 0 { print("the log is incomplete") }
  /// ```
  public var recordsLost: UInt64 = 0

  /// Summarises `records`, keeping the `top` call-outs by time per loop.
  ///
  /// ```swift
  /// let summary = TraceSummary(records: records, top: 5)
  /// ```
  public init(records: [TraceRecord], top: Int = 10) {
    var builder = Builder()
    for record in records { builder.add(record) }
    self = builder.summary(top: top)
  }

  // The builder's result (TraceSummary+Builder.swift): loops already totalled.
  init(
    loops: [Loop], loopsNotSummarised: Int = 0, recordsNotSummarised: Int = 0,
    recordsLost: UInt64 = 0
  ) {
    self.loops = loops
    self.loopsNotSummarised = loopsNotSummarised
    self.recordsNotSummarised = recordsNotSummarised
    self.recordsLost = recordsLost
  }

  /// The summary as text for people.
  ///
  /// ```swift
  /// print(TraceSummary(records: records).text)
  /// ```
  public var text: String {
    var lines: [String] = []
    for loop in loops {
      let percent = Int((loop.asleepFraction * 100).rounded())
      let utilization = (loop.utilization * 1000).rounded() / 10
      lines.append(
        "loop \(loop.loop) (\(loop.thread), tid \(loop.tid)): \(loop.iterations) iterations, "
          + "\(percent)% asleep over \(ms(loop.spanNanoseconds)), utilization \(utilization)%"
          + (loop.stalls > 0 ? ", \(loop.stalls) stall\(loop.stalls == 1 ? "" : "s")" : ""))
      for (kind, delay) in loop.delays.sorted(by: { $0.key < $1.key }) {
        lines.append(
          "  delay \(kind): p50 \(ms(delay.p50)), p99 \(ms(delay.p99)), max \(ms(delay.max)) "
            + "(\(delay.count) call-outs)")
      }
      if loop.timerLateness.count > 0 {
        lines.append(
          "  timer lateness: p50 \(ms(loop.timerLateness.p50)), "
            + "p99 \(ms(loop.timerLateness.p99)), max \(ms(loop.timerLateness.max)) "
            + "(\(loop.timerLateness.count) firings)")
      }
      for callout in loop.topCallouts {
        lines.append(
          "  \(callout.kind) \(callout.name): \(callout.count)x, \(ms(callout.totalNanoseconds))")
      }
      if loop.calloutsUnderOtherNames > 0 {
        lines.append(
          "  \(loop.calloutsUnderOtherNames) call-outs under names past the first "
            + "\(Builder.calloutNameLimit), totalled as '(other names)'")
      }
      if loop.delaysNotRecorded > 0 {
        lines.append(
          "  \(loop.delaysNotRecorded) delays not recorded (the summary keeps at most "
            + "\(Builder.histogramLimit) histograms)")
      }
    }
    if loopsNotSummarised > 0 {
      let atLeast = loopsNotSummarised >= Builder.foldedLoopCountLimit ? "at least " : ""
      lines.append(
        "\(atLeast)\(loopsNotSummarised) more loops (\(recordsNotSummarised) records) not "
          + "summarised: the summary keeps the first \(Builder.loopLimit)")
    }
    if recordsLost > 0 {
      lines.append(
        "the log is incomplete: its writer lost \(recordsLost) records (its loss records "
          + "say where)")
    }
    return lines.joined(separator: "\n") + "\n"
  }

  private func ms(_ nanoseconds: Int64) -> String {
    let hundredths = (Double(nanoseconds) / 1e4).rounded() / 100
    return "\(hundredths) ms"
  }
}
