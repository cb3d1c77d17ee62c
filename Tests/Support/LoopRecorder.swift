import RunLoopCore

/// Records, in the order they happen, what a loop tells its instruments (activities and
/// call-outs, each with its pass) and the marks a test adds between them. Every suite that
/// checks what a loop did, and in which order, reads it from one of these.
///
/// ```swift
/// let recorder = LoopRecorder([.activities, .callouts])
/// loop.addInstrument(recorder)
/// loop.perform(name: "work") { recorder.mark("in work") }
/// _ = try loop.run(mode: .default, timeout: .zero)
/// #expect(recorder.log.contains("callout:block:work"))
/// ```
public final class LoopRecorder: RunLoopInstrument, Sendable {
  /// One recorded event.
  public enum Event: Sendable {
    /// The loop reached an activity.
    case activity(LoopActivity, LoopPassInfo)
    /// The loop made a call-out.
    case callout(CalloutRecord, LoopPassInfo)
    /// The test added a mark.
    case mark(String)
  }

  /// A call-out with the pass it ran in.
  public struct Callout: Sendable {
    /// What the loop reported of the call-out.
    public let record: CalloutRecord
    /// The pass it ran in.
    public let info: LoopPassInfo

    /// The call-out's name.
    public var name: String { record.name }
    /// When it began.
    public var start: ContinuousClock.Instant { record.start }
    /// When it was due, if it had a due time.
    public var dueAt: ContinuousClock.Instant? { record.dueAt }
    /// The pass's number.
    public var iteration: UInt64 { info.iteration }
  }

  /// What the loop tells it.
  public let interests: InstrumentInterests
  private let recorded = GuardedState<[Event]>([])

  /// A recorder of what `interests` names (activities only by default).
  public init(_ interests: InstrumentInterests = .activities) {
    self.interests = interests
  }

  /// Records the activity.
  public func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    recorded.withLock { $0.append(.activity(activity, info)) }
  }

  /// Records the call-out.
  public func runLoop(
    _ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo
  ) {
    recorded.withLock { $0.append(.callout(callout, info)) }
  }

  /// Adds `text` to the record, between what the loop reported before and after.
  public func mark(_ text: String) {
    recorded.withLock { $0.append(.mark(text)) }
  }

  /// Forgets everything recorded so far.
  public func clear() {
    recorded.withLock { $0.removeAll() }
  }

  /// Everything recorded, in order.
  public var events: [Event] { recorded.withLock { $0 } }

  /// The record as lines: an activity's name (`beforeWaiting`), `callout:KIND:NAME`, or a
  /// mark's text.
  public var log: [String] { events.map(Self.line) }

  /// The lines of ``log`` with the step the loop reported in front of each activity and
  /// call-out (`4 callout:source:s`); marks as they are.
  public var stepLog: [String] {
    events.map { event in
      switch event {
      case .activity(_, let info), .callout(_, let info): "\(info.step) \(Self.line(event))"
      case .mark: Self.line(event)
      }
    }
  }

  private static func line(_ event: Event) -> String {
    switch event {
    case .activity(let activity, _): activity.name
    case .callout(let record, _): "callout:\(record.kind):\(record.name)"
    case .mark(let text): text
    }
  }

  /// The activities, in order.
  public var activities: [LoopActivity] {
    events.compactMap { event in
      if case .activity(let activity, _) = event { activity } else { nil }
    }
  }

  /// The call-outs of `kind` named `name` (every kind, every name when `nil`), in order.
  public func callouts(_ kind: CalloutKind? = nil, named name: String? = nil) -> [Callout] {
    events.compactMap { event in
      guard case .callout(let record, let info) = event, kind == nil || record.kind == kind,
        name == nil || record.name == name
      else { return nil }
      return Callout(record: record, info: info)
    }
  }

  /// The records of every call-out, in order.
  public var records: [CalloutRecord] { callouts().map(\.record) }

  /// The first call-out named `name`.
  public func first(named name: String) -> CalloutRecord? { callouts(named: name).first?.record }

  /// The timer call-outs, in order.
  public var timerCallouts: [Callout] { callouts(.timer) }

  /// How many times a loop woke from a sleep.
  public var wakeUps: Int { activities.filter { $0 == .afterWaiting }.count }
}
