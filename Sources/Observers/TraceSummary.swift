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
    /// Stalls the watchdog reported (`stall` records).
    ///
    /// ```swift
    /// let stalls = summary.loops[0].stalls
    /// ```
    public var stalls: Int = 0

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
      var delays: [String: Histogram<UInt64>] = [:]
      var stalls = 0
      // Outermost runs: the ended ones' total, when the open one began, and whether any
      // entry or exit was seen (a trace inside one run has neither).
      var inRuns: Int64 = 0
      var runStart: Int64?
      var sawRunEdge = false
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
        if record.depth == 1 && record.activity == "entry" {
          totals.runStart = record.timestamp
          totals.sawRunEdge = true
        } else if record.depth == 1 && record.activity == "exit" {
          let start = totals.runStart ?? totals.first
          totals.inRuns = totals.inRuns.saturatingAdding(
            record.timestamp.saturatingSubtracting(start))
          totals.runStart = nil
          totals.sawRunEdge = true
        }
      case .stall:
        totals.stalls += 1
      case .recovery:
        break
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
        if let late = record.lateness {
          let kind = record.calloutKind ?? ""
          if totals.delays[kind] == nil { totals.delays[kind] = _LoopAccumulator.makeHistogram() }
          _ = totals.delays[kind]!.record(UInt64(max(0, late)))
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
          var loop = Loop(
            loop: id, thread: totals.thread, tid: totals.tid, iterations: totals.iterations,
            spanNanoseconds: totals.last.saturatingSubtracting(totals.first),
            asleepNanoseconds: totals.asleep,
            topCallouts: Array(
              totals.callouts.values.sorted {
                ($0.totalNanoseconds, $1.name) > ($1.totalNanoseconds, $0.name)
              }.prefix(top)),
            timerLateness: _LoopAccumulator.latency(totals.lateness))
          // A run open at the end counts to the last record; a trace that saw no entry or
          // exit lies inside one run.
          var inRuns = totals.inRuns
          if let start = totals.runStart {
            inRuns = inRuns.saturatingAdding(totals.last.saturatingSubtracting(start))
          }
          loop.runNanoseconds =
            totals.sawRunEdge ? inRuns : totals.last.saturatingSubtracting(totals.first)
          loop.delays = totals.delays.mapValues(_LoopAccumulator.latency)
          loop.stalls = totals.stalls
          return loop
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
    }
    return lines.joined(separator: "\n") + "\n"
  }

  private func ms(_ nanoseconds: Int64) -> String {
    let hundredths = (Double(nanoseconds) / 1e4).rounded() / 100
    return "\(hundredths) ms"
  }
}
