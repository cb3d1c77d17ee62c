import Histogram
import RunLoopObservers

extension TraceSummary {
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
    public var thread: String
    /// Its thread id.
    public var tid: Int32
    /// Passes seen (`beforeTimers` records).
    public var iterations: UInt64
    /// Nanoseconds from the loop's first record to its last.
    public var spanNanoseconds: Int64
    /// Nanoseconds asleep.
    public var asleepNanoseconds: Int64
    /// Call-outs by total time, largest first: kind, name, count, total nanoseconds.
    public var topCallouts: [Callout]
    /// Timer lateness in nanoseconds: p50, p99, max, and how many timers fired.
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
    public var stalls: Int = 0
    /// Call-outs under names past the first ``TraceSummary/Builder/calloutNameLimit`` of the
    /// loop, totalled as one entry, `(other names)` (a log that names every job apart would
    /// otherwise keep an entry per record).
    ///
    /// ```swift
    /// let folded = summary.loops[0].calloutsUnderOtherNames
    /// ```
    public var calloutsUnderOtherNames: Int = 0
    /// Delays not in ``delays`` or ``timerLateness``: the summary keeps at most
    /// ``TraceSummary/Builder/histogramLimit`` histograms in all, the kinds past the first
    /// ``TraceSummary/Builder/kindLimit`` of a loop share one, `(other kinds)`.
    ///
    /// ```swift
    /// let unrecorded = summary.loops[0].delaysNotRecorded
    /// ```
    public var delaysNotRecorded: Int = 0

    /// Busy over busy plus asleep, in runs: `(runNanoseconds - asleepNanoseconds) /
    /// runNanoseconds`, from 0 to 1.
    public var utilization: Double {
      guard runNanoseconds > 0 else { return 0 }
      return min(1, max(0, 1 - Double(asleepNanoseconds) / Double(runNanoseconds)))
    }

    /// The share of the loop's span spent asleep, from 0 to 1.
    public var asleepFraction: Double {
      guard spanNanoseconds > 0 else { return 0 }
      return min(1, max(0, Double(asleepNanoseconds) / Double(spanNanoseconds)))
    }
  }
}
