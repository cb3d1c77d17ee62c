extension TraceTimeline {
  /// One span of a thread's time.
  ///
  /// ```swift
  /// let spans = TraceTimeline.spans(from: records)
  /// ```
  public struct Span: Sendable, Hashable {
    /// The thread.
    public var tid: Int32
    /// What the loop was doing.
    public var state: State
    /// Start, monotonic nanoseconds.
    public var start: Int64
    /// End, monotonic nanoseconds.
    public var end: Int64
    /// A label (the call-out's name).
    public var label: String
    /// The mode of the run the span is in.
    public var mode: String
    /// How many runs of the loop were active (1 for an outermost run); a nested run's own
    /// span has its depth.
    ///
    /// ```swift
    /// let nested = spans.filter { $0.state == .waking && $0.depth > 1 }
    /// ```
    public var depth: Int

    /// Creates a span.
    ///
    /// ```swift
    /// let span = TraceTimeline.Span(tid: 7, state: .sleeping, start: 0, end: 1_000, label: "")
    /// ```
    package init(
      tid: Int32, state: State, start: Int64, end: Int64, label: String, mode: String = "",
      depth: Int = 1
    ) {
      self.tid = tid
      self.state = state
      self.start = start
      self.end = end
      self.label = label
      self.mode = mode
      self.depth = depth
    }
  }
}
