/// One call-out a run loop made into user code, as instruments receive it.
///
/// ```swift
/// let late = record.dueAt.map { record.start - $0 }  // a timer's lateness
/// ```
public struct CalloutRecord: Sendable, Hashable {
  /// What kind of call-out it was.
  public let kind: CalloutKind
  /// The name of the timer, source, request or port.
  public let name: String
  /// When the call-out began.
  public let start: ContinuousClock.Instant
  /// When it returned.
  public let end: ContinuousClock.Instant
  /// When the work became due: a timer's scheduled fire date, or the instant a custom
  /// source was signalled. `nil` when unknown.
  public let dueAt: ContinuousClock.Instant?

  /// Creates a record.
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
  public var duration: Duration { end - start }
}
