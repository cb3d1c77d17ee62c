import Histogram

/// A summary of a trace per loop: iterations, share of time asleep, the call-outs that took
/// the most time, and timer lateness.
///
/// ```swift
/// let summary = TraceSummary(records: try TraceLog.read(contentsOf: "/tmp/loop.jsonl"))
/// print(summary.text)
/// ```
public struct TraceSummary: Sendable, Hashable {
  /// One loop's summary.
  ///
  /// ```swift
  /// for loop in TraceSummary(records: records).loops { print(loop.iterations) }
  /// ```
  public struct Loop: Sendable, Hashable {
    /// The loop's id.
    ///
    /// ```swift
    /// let id = summary.loops[0].loop
    /// ```
    public var loop: UInt64
    /// Its thread's name.
    ///
    /// ```swift
    /// let thread = summary.loops[0].thread
    /// ```
    public var thread: String
    /// Its thread id.
    ///
    /// ```swift
    /// let tid = summary.loops[0].tid
    /// ```
    public var tid: Int32
    /// Passes seen (`beforeTimers` records).
    ///
    /// ```swift
    /// let iterations = summary.loops[0].iterations
    /// ```
    public var iterations: UInt64
    /// Nanoseconds from the loop's first record to its last.
    ///
    /// ```swift
    /// let spanNanoseconds = summary.loops[0].spanNanoseconds
    /// ```
    public var spanNanoseconds: Int64
    /// Nanoseconds asleep.
    ///
    /// ```swift
    /// let asleepNanoseconds = summary.loops[0].asleepNanoseconds
    /// ```
    public var asleepNanoseconds: Int64
    /// Call-outs by total time, largest first: kind, name, count, total nanoseconds.
    ///
    /// ```swift
    /// let topCallouts = summary.loops[0].topCallouts
    /// ```
    public var topCallouts: [Callout]
    /// Timer lateness in nanoseconds: p50, p99, max, and how many timers fired.
    ///
    /// ```swift
    /// let timerLateness = summary.loops[0].timerLateness
    /// ```
    public var timerLateness: LoopMetricsSnapshot.Latency

    /// The share of the loop's span spent asleep, from 0 to 1.
    ///
    /// ```swift
    /// let asleepFraction = summary.loops[0].asleepFraction
    /// ```
    public var asleepFraction: Double {
      guard spanNanoseconds > 0 else { return 0 }
      return min(1, max(0, Double(asleepNanoseconds) / Double(spanNanoseconds)))
    }
  }

  /// Totals of one call-out, by kind and name.
  ///
  /// ```swift
  /// let busiest = TraceSummary(records: records).loops[0].topCallouts.first
  /// ```
  public struct Callout: Sendable, Hashable {
    /// The call-out kind.
    ///
    /// ```swift
    /// let kind = callout.kind  // "timer"
    /// ```
    public var kind: String
    /// The call-out name.
    ///
    /// ```swift
    /// let name = callout.name
    /// ```
    public var name: String
    /// How many times it ran.
    ///
    /// ```swift
    /// let count = callout.count
    /// ```
    public var count: Int
    /// Its total time, in nanoseconds.
    ///
    /// ```swift
    /// let total = callout.totalNanoseconds
    /// ```
    public var totalNanoseconds: Int64
  }

  /// The loops, by id.
  ///
  /// ```swift
  /// let loops = TraceSummary(records: records).loops
  /// ```
  public var loops: [Loop]

  /// Summarises `records`, keeping the `top` call-outs by time per loop.
  ///
  /// ```swift
  /// let summary = TraceSummary(records: records, top: 5)
  /// ```
  public init(records: [TraceRecord], top: Int = 10) {
    var byLoop: [UInt64: [TraceRecord]] = [:]
    for record in records { byLoop[record.loop, default: []].append(record) }
    loops = byLoop.keys.sorted().map { id in
      let records = byLoop[id]!
      let first = records.map(\.timestamp).min() ?? 0
      let last = records.map(\.endTimestamp).max() ?? first
      var callouts: [String: Callout] = [:]
      var lateness = Histogram<UInt64>(
        lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000_000,
        numberOfSignificantValueDigits: .three)
      lateness.autoResize = true
      for record in records where record.record == .callout {
        let key = "\(record.calloutKind ?? "")\u{0}\(record.calloutName ?? "")"
        var entry =
          callouts[key]
          ?? Callout(
            kind: record.calloutKind ?? "", name: record.calloutName ?? "", count: 0,
            totalNanoseconds: 0)
        entry.count += 1
        entry.totalNanoseconds = entry.totalNanoseconds.saturatingAdding(record.duration ?? 0)
        callouts[key] = entry
        if record.calloutKind == "timer", let late = record.lateness {
          _ = lateness.record(UInt64(max(0, late)))
        }
      }
      return Loop(
        loop: id, thread: records.first?.thread ?? "", tid: records.first?.tid ?? 0,
        iterations: UInt64(records.filter { $0.activity == "beforeTimers" }.count),
        // Saturating: the summary reads logs written by anyone, damaged ones included.
        spanNanoseconds: last.saturatingSubtracting(first),
        asleepNanoseconds: records.filter { $0.record == .sleep }.reduce(0) {
          $0.saturatingAdding($1.duration ?? 0)
        },
        topCallouts: Array(
          callouts.values.sorted {
            ($0.totalNanoseconds, $1.name) > ($1.totalNanoseconds, $0.name)
          }.prefix(top)),
        timerLateness: _LoopAccumulator.latency(lateness))
    }
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
      lines.append(
        "loop \(loop.loop) (\(loop.thread), tid \(loop.tid)): \(loop.iterations) iterations, "
          + "\(percent)% asleep over \(ms(loop.spanNanoseconds))")
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
    }
    return lines.joined(separator: "\n") + "\n"
  }

  private func ms(_ nanoseconds: Int64) -> String {
    let hundredths = (Double(nanoseconds) / 1e4).rounded() / 100
    return "\(hundredths) ms"
  }
}
