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
    var builder = Builder()
    for record in records { builder.add(record) }
    self = builder.summary(top: top)
  }

  /// Summarises a trace as it is read, in memory that grows with the loops and distinct
  /// call-outs, not with the records: what `runloop-demo trace summary` uses on logs of any
  /// size.
  ///
  /// ```swift
  /// var builder = TraceSummary.Builder()
  /// let reader = try TraceLogReader(path: "trace.jsonl")
  /// while let record = try reader.next() { builder.add(record) }
  /// print(builder.summary(top: 5).text)
  /// ```
  public struct Builder: Sendable {
    private struct Totals: Sendable {
      var thread: String
      var tid: Int32
      var first: Int64
      var last: Int64
      var iterations: UInt64 = 0
      var asleep: Int64 = 0
      var callouts: [String: Callout] = [:]
      var lateness: Histogram<UInt64>
    }

    private var loops: [UInt64: Totals] = [:]

    /// Creates an empty builder.
    ///
    /// ```swift
    /// var builder = TraceSummary.Builder()
    /// ```
    public init() {}

    /// Adds one record.
    ///
    /// ```swift
    /// builder.add(record)
    /// ```
    public mutating func add(_ record: TraceRecord) {
      if loops[record.loop] == nil {
        var lateness = Histogram<UInt64>(
          lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000_000,
          numberOfSignificantValueDigits: .three)
        lateness.autoResize = true
        loops[record.loop] = Totals(
          thread: record.thread, tid: record.tid, first: record.timestamp,
          last: record.endTimestamp, lateness: lateness)
      }
      Self.add(record, to: &loops[record.loop]!)
    }

    private static func add(_ record: TraceRecord, to totals: inout Totals) {
      totals.first = min(totals.first, record.timestamp)
      totals.last = max(totals.last, record.endTimestamp)
      switch record.record {
      case .activity:
        if record.activity == "beforeTimers" { totals.iterations += 1 }
      case .sleep:
        // Saturating: the summary reads logs written by anyone, damaged ones included.
        totals.asleep = totals.asleep.saturatingAdding(record.duration ?? 0)
      case .callout:
        let key = "\(record.calloutKind ?? "")\u{0}\(record.calloutName ?? "")"
        var entry =
          totals.callouts[key]
          ?? Callout(
            kind: record.calloutKind ?? "", name: record.calloutName ?? "", count: 0,
            totalNanoseconds: 0)
        entry.count += 1
        entry.totalNanoseconds = entry.totalNanoseconds.saturatingAdding(record.duration ?? 0)
        totals.callouts[key] = entry
        if record.calloutKind == "timer", let late = record.lateness {
          _ = totals.lateness.record(UInt64(max(0, late)))
        }
      }
    }

    /// The summary of the records added, keeping the `top` call-outs by time per loop.
    ///
    /// ```swift
    /// let summary = builder.summary(top: 5)
    /// ```
    public func summary(top: Int = 10) -> TraceSummary {
      TraceSummary(
        loops: loops.keys.sorted().map { id in
          let totals = loops[id]!
          return Loop(
            loop: id, thread: totals.thread, tid: totals.tid, iterations: totals.iterations,
            spanNanoseconds: totals.last.saturatingSubtracting(totals.first),
            asleepNanoseconds: totals.asleep,
            topCallouts: Array(
              totals.callouts.values.sorted {
                ($0.totalNanoseconds, $1.name) > ($1.totalNanoseconds, $0.name)
              }.prefix(top)),
            timerLateness: _LoopAccumulator.latency(totals.lateness))
        })
    }
  }

  private init(loops: [Loop]) {
    self.loops = loops
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
