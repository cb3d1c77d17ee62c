extension TraceTimeline {
  /// What to draw.
  ///
  /// ```swift
  /// let options = TraceTimeline.Options(width: 1600, from: 2_000_000, to: 4_000_000)
  /// ```
  public struct Options: Sendable, Hashable {
    /// The drawing's width in pixels (at least 400).
    ///
    /// ```swift
    /// options.width = 1600
    /// ```
    public var width: Int
    /// The start of the window, in nanoseconds after the trace's first record; `nil` for
    /// the trace's start.
    ///
    /// ```swift
    /// options.from = 120_000_000  // 120 ms into the trace
    /// ```
    public var from: Int64?
    /// The end of the window, in nanoseconds after the trace's first record; `nil` for the
    /// trace's end.
    ///
    /// ```swift
    /// options.to = 180_000_000
    /// ```
    public var to: Int64?
    /// A call-out at least this long (nanoseconds) during which its loop never slept is
    /// marked as a stall (one that ran a nested run which slept was not stuck).
    ///
    /// ```swift
    /// options.stallThreshold = 20_000_000  // 20 ms
    /// ```
    public var stallThreshold: Int64

    /// Creates options.
    ///
    /// ```swift
    /// let options = TraceTimeline.Options(from: 0, to: 50_000_000)
    /// ```
    public init(
      width: Int = 1200, from: Int64? = nil, to: Int64? = nil,
      stallThreshold: Int64 = 50_000_000
    ) {
      self.width = width
      self.from = from
      self.to = to
      self.stallThreshold = stallThreshold
    }
  }
}
