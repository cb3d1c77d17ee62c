import Histogram
import RunLoopObservers

extension TraceSummary {
  /// Summarises a trace as it is read, in bounded memory whatever the log holds: what
  /// `runloop-demo trace summary` uses on logs of any size and content. At most
  /// ``loopLimit`` loops, ``calloutNameLimit`` call-out names per loop and ``histogramLimit``
  /// delay histograms in all are kept; what does not fit is folded and counted (see
  /// ``TraceSummary/loopsNotSummarised``, ``TraceSummary/Loop/calloutsUnderOtherNames`` and
  /// ``TraceSummary/Loop/delaysNotRecorded``).
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
      var lateness: Histogram<UInt64>?
      var delays: [String: Histogram<UInt64>] = [:]
      var otherNames = 0
      var delaysNotRecorded = 0
      var stalls = 0
      // Outermost runs: the ended ones' total, when the open one began, and whether any
      // entry or exit was seen (a trace inside one run has neither).
      var inRuns: Int64 = 0
      var runStart: Int64?
      var sawRunEdge = false
    }

    private var loops: [UInt64: Totals] = [:]
    private var histograms = 0
    private var foldedLoops = Set<UInt64>()
    private var foldedRecords = 0
    // What the log's loss records count (saturating: a damaged log may hold any number).
    private var recordsLost: UInt64 = 0

    /// The most loops summarised; the records of later loops are counted only.
    ///
    /// ```swift
    /// let limit = TraceSummary.Builder.loopLimit
    /// ```
    public static let loopLimit = 256
    /// The most call-out names kept per loop.
    ///
    /// ```swift
    /// let limit = TraceSummary.Builder.calloutNameLimit
    /// ```
    public static let calloutNameLimit = 256
    /// The most call-out kinds with a delay histogram of their own per loop.
    ///
    /// ```swift
    /// let limit = TraceSummary.Builder.kindLimit
    /// ```
    public static let kindLimit = 16
    /// The most histograms (timer lateness and delays) kept in all: each takes a few
    /// hundred kilobytes.
    ///
    /// ```swift
    /// let limit = TraceSummary.Builder.histogramLimit
    /// ```
    public static let histogramLimit = 96
    /// The most loops not summarised that are told apart for the count.
    ///
    /// ```swift
    /// let limit = TraceSummary.Builder.foldedLoopCountLimit
    /// ```
    public static let foldedLoopCountLimit = 1 << 18
    static let otherKinds = "(other kinds)"

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
      guard record.record != .loss else {
        let (sum, overflow) = recordsLost.addingReportingOverflow(record.lost ?? 0)
        recordsLost = overflow ? .max : sum
        return
      }
      // Taken out while it is added to (the histogram budget is the builder's), so that its
      // tables stay uniquely owned and are not copied.
      var totals: Totals
      if let known = loops.removeValue(forKey: record.loop) {
        totals = known
      } else {
        guard loops.count < Self.loopLimit else {
          foldedRecords += 1
          if foldedLoops.count < Self.foldedLoopCountLimit { foldedLoops.insert(record.loop) }
          return
        }
        totals = Totals(
          thread: record.thread, tid: record.tid, first: record.timestamp,
          last: record.endTimestamp)
      }
      add(record, to: &totals)
      loops[record.loop] = totals
    }

    /// A histogram for a new table, or `nil` once ``histogramLimit`` are kept.
    private mutating func newHistogram() -> Histogram<UInt64>? {
      guard histograms < Self.histogramLimit else { return nil }
      histograms += 1
      return LoopAccumulator.makeHistogram()
    }

    private mutating func add(_ record: TraceRecord, to totals: inout Totals) {
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
      case .recovery, .loss:
        break
      case .sleep:
        // Saturating: the summary reads logs written by anyone, damaged ones included.
        totals.asleep = totals.asleep.saturatingAdding(record.duration ?? 0)
      case .callout:
        var key = "\(record.calloutKind ?? "")\u{0}\(record.calloutName ?? "")"
        if totals.callouts[key] == nil, totals.callouts.count >= Self.calloutNameLimit {
          key = "\u{0}(other names)"
          totals.otherNames += 1
        }
        var entry =
          totals.callouts[key]
          ?? (key == "\u{0}(other names)"
            ? Callout(kind: "", name: "(other names)", count: 0, totalNanoseconds: 0)
            : Callout(
              kind: record.calloutKind ?? "", name: record.calloutName ?? "", count: 0,
              totalNanoseconds: 0))
        entry.count += 1
        entry.totalNanoseconds = entry.totalNanoseconds.saturatingAdding(record.duration ?? 0)
        totals.callouts[key] = entry
        guard let late = record.lateness else { return }
        let value = UInt64(max(0, late))
        if record.calloutKind == "timer" {
          if totals.lateness == nil { totals.lateness = newHistogram() }
          if totals.lateness != nil {
            _ = totals.lateness!.record(value)
          } else {
            totals.delaysNotRecorded += 1
          }
        }
        var kind = record.calloutKind ?? ""
        if totals.delays[kind] == nil {
          if totals.delays.count >= Self.kindLimit { kind = Self.otherKinds }
          if totals.delays[kind] == nil, let histogram = newHistogram() {
            totals.delays[kind] = histogram
          }
        }
        if totals.delays[kind] != nil {
          _ = totals.delays[kind]!.record(value)
        } else {
          totals.delaysNotRecorded += 1
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
            timerLateness: LoopAccumulator.latency(
              totals.lateness ?? LoopAccumulator.makeHistogram()))
          // A run open at the end counts to the last record; a trace that saw no entry or
          // exit lies inside one run.
          var inRuns = totals.inRuns
          if let start = totals.runStart {
            inRuns = inRuns.saturatingAdding(totals.last.saturatingSubtracting(start))
          }
          loop.runNanoseconds =
            totals.sawRunEdge ? inRuns : totals.last.saturatingSubtracting(totals.first)
          loop.delays = totals.delays.mapValues(LoopAccumulator.latency)
          loop.stalls = totals.stalls
          loop.calloutsUnderOtherNames = totals.otherNames
          loop.delaysNotRecorded = totals.delaysNotRecorded
          return loop
        }, loopsNotSummarised: foldedLoops.count, recordsNotSummarised: foldedRecords,
        recordsLost: recordsLost)
    }
  }
}
