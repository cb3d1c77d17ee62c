import Histogram
import RunLoopObservers

extension TraceSummary {
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
}
