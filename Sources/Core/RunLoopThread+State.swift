extension RunLoopThread {
  /// Where a thread is in its life.
  ///
  /// ```swift
  /// if worker.state == .finished { try worker.join() }
  /// ```
  public enum State: UInt8, Sendable {
    /// Created, not started.
    case created
    /// Running its entry closure.
    case executing
    /// The entry closure returned or threw.
    case finished
  }
}
