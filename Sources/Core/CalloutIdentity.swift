/// The ids a tracing system gave a call-out: its span id and the id of the trace it belongs
/// to (W3C sizes: 64 and 128 bits). An instrument that wraps call-outs hands them to the
/// loop (see ``RunLoopInstrument/runLoop(_:callingOut:name:cause:context:_:_:)``), which then uses
/// them as the call-out's own ids: in its ``CalloutRecord``, as the cause of what the
/// call-out queues, and in the trace context a named-port frame carries, so that every
/// sink names the span the tracing backend shows.
///
/// ```swift
/// let identity = CalloutIdentity(span: 0x00f0_67aa_0ba9_02b7, traceID: (0x4bf9_2f35_77b3_4da6, 1))
/// ```
public struct CalloutIdentity: Sendable, Hashable {
  /// The span id; never 0.
  ///
  /// ```swift
  /// print(String(identity.span, radix: 16))
  /// ```
  public let span: UInt64
  private let traceHigh: UInt64
  private let traceLow: UInt64

  /// The trace id as two words (high first, as W3C prints it).
  ///
  /// ```swift
  /// let (high, low) = identity.traceID
  /// ```
  public var traceID: (high: UInt64, low: UInt64) { (traceHigh, traceLow) }

  /// Creates an identity; `nil` when the span id is 0 or the trace id is all zero (W3C's
  /// invalid ids).
  ///
  /// ```swift
  /// let identity = CalloutIdentity(span: 7, traceID: (0, 1))
  /// ```
  public init?(span: UInt64, traceID: (high: UInt64, low: UInt64)) {
    guard span != 0, traceID.high != 0 || traceID.low != 0 else { return nil }
    self.span = span
    self.traceHigh = traceID.high
    self.traceLow = traceID.low
  }
}
