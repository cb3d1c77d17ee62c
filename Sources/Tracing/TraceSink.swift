/// Where a ``LoopTracer`` sends its records.
///
/// The tracer calls ``enqueue(_:)`` on the traced loop's thread, so a sink must only hand the
/// record over (to a queue a writer thread drains) and never wait there.
///
/// ```swift
/// final class CountingSink: TraceSink {
///   let count = Atomic<Int>(0)
///   func enqueue(_ record: TraceRecord) { count.add(1, ordering: .relaxed) }
///   func close() {}
/// }
/// ```
public protocol TraceSink: AnyObject, Sendable {
  /// Takes one record; called on the loop thread, must not block.
  func enqueue(_ record: TraceRecord)
  /// Writes out what is queued and releases the sink's resources; later records are ignored.
  /// Must not wait forever on a stuck destination: wait up to a bound, and account for what
  /// is left (the sinks here return at their timeout and their writers keep going).
  func close()
  /// Like ``close()``, but returns by `deadline` whatever the destination does; returns
  /// whether everything queued was written. A sink that gives up accounts for what it left
  /// behind in its statistics. ``LoopTracer/close(timeout:)`` gives all its sinks one
  /// deadline this way. The default calls ``close()`` and returns `true`.
  ///
  /// ```swift
  /// let done = sink.close(before: .now + .seconds(2))
  /// ```
  func close(before deadline: ContinuousClock.Instant) -> Bool
}

extension TraceSink {
  /// Calls ``close()`` and returns `true`: for a sink that has no bound of its own to honour.
  ///
  /// ```swift
  /// _ = CountingSink().close(before: .now)
  /// ```
  public func close(before deadline: ContinuousClock.Instant) -> Bool {
    close()
    return true
  }
}
