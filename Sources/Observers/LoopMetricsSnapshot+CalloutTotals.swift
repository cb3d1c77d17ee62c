import RunLoopCore

extension LoopMetricsSnapshot {
  /// Count and total time of one kind of call-out.
  ///
  /// ```swift
  /// let timers = snapshot.callouts["timer"]?.count ?? 0
  /// ```
  public struct CalloutTotals: Sendable, Hashable {
    /// How many call-outs of the kind ran.
    ///
    /// ```swift
    /// let samples = snapshot.timerLateness.count
    /// ```
    public var count: UInt64
    /// Their total duration, in nanoseconds.
    ///
    /// ```swift
    /// let time = snapshot.callouts["source"]?.totalNanoseconds
    /// ```
    public var totalNanoseconds: Int64

    /// Creates totals.
    ///
    /// ```swift
    /// let totals = LoopMetricsSnapshot.CalloutTotals(count: 2, totalNanoseconds: 1_500)
    /// ```
    package init(count: UInt64, totalNanoseconds: Int64) {
      self.count = count
      self.totalNanoseconds = totalNanoseconds
    }
  }
}
