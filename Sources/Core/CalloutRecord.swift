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

  /// Creates a record.
  ///
  /// ```swift
  /// let start = ContinuousClock.now
  /// let record = CalloutRecord(kind: .block, name: "job", start: start, end: .now)
  /// ```
  public init(
    kind: CalloutKind, name: String, start: ContinuousClock.Instant,
    end: ContinuousClock.Instant, dueAt: ContinuousClock.Instant? = nil
  ) {
    self.kind = kind
    self.name = name
    self.start = start
    self.end = end
    self.dueAt = dueAt
  }

  /// How long the call-out ran.
  ///
  /// ```swift
  /// if record.duration > .milliseconds(10) { print("slow call-out:", record.name) }
  /// ```
  public var duration: Duration { end - start }
}
