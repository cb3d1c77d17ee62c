import Histogram

/// A summary of a trace per loop: iterations, share of time asleep, utilization (busy over
/// busy plus asleep, in runs), the delay of each kind of call-out from its due time, the
/// call-outs that took the most time, and timer lateness.
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
    /// Nanoseconds in runs (outermost entry to exit; a run the trace began or ended inside of
    /// counts from the loop's first record or to its last).
    ///
    /// ```swift
    /// let inRuns = summary.loops[0].runNanoseconds
    /// ```
    public var runNanoseconds: Int64 = 0
    /// How long call-outs waited from their due time to their start, by call-out kind
    /// (records with `lateness_ns`).
    ///
    /// ```swift
    /// let performDelay = summary.loops[0].delays["block"]?.p99
    /// ```
    public var delays: [String: LoopMetricsSnapshot.Latency] = [:]

    /// Busy over busy plus asleep, in runs: `(runNanoseconds - asleepNanoseconds) /
    /// runNanoseconds`, from 0 to 1.
    ///
    /// ```swift
    /// let utilization = summary.loops[0].utilization
    /// ```
    public var utilization: Double {
      guard runNanoseconds > 0 else { return 0 }
      return min(1, max(0, 1 - Double(asleepNanoseconds) / Double(runNanoseconds)))
    }

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
      var delays: [String: Histogram<UInt64>] = [:]
      for record in records where record.record == .callout {
        if let late = record.lateness {
          let kind = record.calloutKind ?? ""
          if delays[kind] == nil { delays[kind] = _LoopAccumulator.makeHistogram() }
          _ = delays[kind]!.record(UInt64(max(0, late)))
        }
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
      var loop = Loop(
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
      loop.runNanoseconds = Self.runTime(records, from: first, to: last)
      loop.delays = delays.mapValues(_LoopAccumulator.latency)
      return loop
    }
  }

  /// Time in outermost runs: entry to exit at depth 1, a run open at either end of the trace
  /// counted from `first` or to `last`.
  private static func runTime(_ records: [TraceRecord], from first: Int64, to last: Int64)
    -> Int64
  {
    var total: Int64 = 0
    var start: Int64? = nil
    var sawEntry = false
    for record in records where record.record == .activity && record.depth == 1 {
      if record.activity == "entry" {
        start = record.timestamp
        sawEntry = true
      } else if record.activity == "exit" {
        total = total.saturatingAdding(record.timestamp.saturatingSubtracting(start ?? first))
        start = nil
        sawEntry = true
      }
    }
    if let start { total = total.saturatingAdding(last.saturatingSubtracting(start)) }
    // A trace of a run that neither began nor ended in it: the whole span is in the run.
    if !sawEntry { total = last.saturatingSubtracting(first) }
    return total
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
          + "\(percent)% asleep over \(ms(loop.spanNanoseconds)), utilization \(utilization)%")
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
    }
    return lines.joined(separator: "\n") + "\n"
  }

  private func ms(_ nanoseconds: Int64) -> String {
    let hundredths = (Double(nanoseconds) / 1e4).rounded() / 100
    return "\(hundredths) ms"
  }
}
