/// One call-out a run loop made into user code, as instruments receive it.
///
/// ```swift
/// let late = record.dueAt.map { record.start - $0 }  // a timer's lateness
/// ```
public struct CalloutRecord: Sendable, Hashable {
  /// What kind of call-out it was.
  ///
  /// ```swift
  /// if record.kind == .timer { timerCallouts += 1 }
  /// ```
  public let kind: CalloutKind
  /// The name of the timer, source, request or port.
  ///
  /// ```swift
  /// print("\(record.kind) \(record.name) took \(record.duration)")
  /// ```
  public let name: String
  /// When the call-out began.
  ///
  /// ```swift
  /// let lateness = record.dueAt.map { record.start - $0 }
  /// ```
  public let start: ContinuousClock.Instant
  /// When it returned.
  ///
  /// ```swift
  /// let elapsed = record.end - record.start  // the same as record.duration
  /// ```
  public let end: ContinuousClock.Instant
  /// When the work became due: a timer's scheduled fire date, or the instant a custom
  /// source was signalled. `nil` when unknown.
  ///
  /// ```swift
  /// if let due = record.dueAt { print("late by", record.start - due) }
  /// ```
  public let dueAt: ContinuousClock.Instant?
  /// The call-out's span: an id unique in the process (or the span id a tracing system
  /// gave it, see ``CalloutIdentity``), never 0 for a call-out the loop made (0 only in
  /// records built by hand without one). What a ``CalloutCause/span`` points at.
  ///
  /// ```swift
  /// spans[record.span] = record.name
  /// ```
  public let span: UInt64
  /// Where the work came from (the request's queuer, the source's first signaller since it
  /// last ran, the port message's sender, the job's enqueuer); `nil` for work whose cause
  /// is time (timers, delayed performs), or that was queued while nothing traced call-outs.
  ///
  /// ```swift
  /// if let cause = record.cause, let parent = spans[cause.span] {
  ///   print("\(parent) -> \(record.name)")
  /// }
  /// ```
  public let cause: CalloutCause?

  /// Creates a record; the loop makes one for each traced call-out.
  // The trace id as two words; both 0 when the call-out belongs to no trace.
  private let traceHigh: UInt64
  private let traceLow: UInt64

  /// The W3C trace id of the trace the call-out belongs to: the one its instruments gave it
  /// (see ``CalloutIdentity``), else the one its ``cause`` came with, or the one it started
  /// by sending a named-port frame; `nil` when it belongs to none.
  ///
  /// ```swift
  /// if let trace = record.traceID { print(String(trace.high, radix: 16)) }
  /// ```
  public var traceID: (high: UInt64, low: UInt64)? {
    traceHigh == 0 && traceLow == 0 ? nil : (traceHigh, traceLow)
  }

  package init(
    kind: CalloutKind, name: String, start: ContinuousClock.Instant,
    end: ContinuousClock.Instant, dueAt: ContinuousClock.Instant? = nil, span: UInt64 = 0,
    cause: CalloutCause? = nil, traceID: (high: UInt64, low: UInt64)? = nil
  ) {
    self.traceHigh = traceID?.high ?? 0
    self.traceLow = traceID?.low ?? 0
    self.kind = kind
    self.name = name
    self.start = start
    self.end = end
    self.dueAt = dueAt
    self.span = span
    self.cause = cause
  }

  /// How long the call-out ran.
  ///
  /// ```swift
  /// if record.duration > .milliseconds(10) { print("slow call-out:", record.name) }
  /// ```
  public var duration: Duration { end - start }
}
