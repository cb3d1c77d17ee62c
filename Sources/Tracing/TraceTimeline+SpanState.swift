extension TraceTimeline.Span {
  /// What the loop was doing.
  ///
  /// ```swift
  /// let asleep = spans.filter { $0.state == .sleeping }
  /// ```
  public enum State: String, Sendable, Hashable {
    /// Asleep in the kernel, waiting for an event.
    case sleeping
    /// In a run, awake, outside call-outs (waking, checking sources and timers).
    case waking
    /// In a call-out into user code.
    case working
  }
}
