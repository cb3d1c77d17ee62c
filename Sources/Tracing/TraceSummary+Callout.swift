import Histogram

extension TraceSummary {
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
    public var name: String
    /// How many times it ran.
    public var count: Int
    /// Its total time, in nanoseconds.
    ///
    /// ```swift
    /// let total = callout.totalNanoseconds
    /// ```
    public var totalNanoseconds: Int64
  }
}
