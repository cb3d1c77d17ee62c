extension TraceRecord {
  /// What a record describes.
  ///
  /// ```swift
  /// let sleeps = records.filter { $0.record == .sleep }
  /// ```
  public enum Kind: String, Sendable, Hashable, Codable {
    /// The loop reached one of the six activities.
    case activity
    /// The loop returned from a call-out into user code.
    case callout
    /// The loop woke from a sleep.
    case sleep
    /// The stall watchdog found the loop awake past its threshold without sleeping; the
    /// record names the call-out it is in and how long it has been awake (`duration_ns`).
    case stall
    /// A stalled loop went back to sleep (or left its run); `duration_ns` is how long it was
    /// awake in all.
    case recovery
    /// The JSON sink's own record, not a tracer's: `lost` records before it never reached
    /// the file (a failed write, a full disk, a truncation by another process). Written by
    /// the first write that succeeds after the loss, or at close; `seq` is 0.
    case loss
  }
}
