import RunLoopCore

extension LoopMetricsSnapshot {
  /// Percentiles of a latency, in nanoseconds.
  public struct Latency: Sendable, Hashable {
    /// How many values were recorded.
    ///
    /// ```swift
    /// let samples = snapshot.timerLateness.count
    /// ```
    public var count: UInt64
    /// The median.
    ///
    /// ```swift
    /// let median = snapshot.timerLateness.p50
    /// ```
    public var p50: Int64
    /// The 99th percentile.
    public var p99: Int64
    /// The largest value.
    ///
    /// ```swift
    /// let worst = snapshot.timerLateness.max
    /// ```
    public var max: Int64

    /// Creates a latency summary.
    ///
    /// ```swift
    /// let none = LoopMetricsSnapshot.Latency(count: 0, p50: 0, p99: 0, max: 0)
    /// ```
    package init(count: UInt64, p50: Int64, p99: Int64, max: Int64) {
      self.count = count
      self.p50 = p50
      self.p99 = p99
      self.max = max
    }
  }
}
