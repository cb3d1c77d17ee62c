/// What an instrument wants to hear about. The loop reads clocks only for what some
/// attached instrument asked for, so an instrument that only wants activities costs no
/// clock reads.
///
/// ```swift
/// var interests: InstrumentInterests { [.activities, .callouts, .sleeps] }
/// ```
public struct InstrumentInterests: OptionSet, Sendable, Hashable {
  /// The bits of the set.
  ///
  /// ```swift
  /// InstrumentInterests.callouts.rawValue  // 2
  /// ```
  public let rawValue: UInt8

  /// Creates a set from its bits.
  ///
  /// ```swift
  /// let interests = InstrumentInterests(rawValue: 0b101)  // [.activities, .sleeps]
  /// ```
  public init(rawValue: UInt8) {
    self.rawValue = rawValue
  }

  /// The six activities of the sequence of events.
  ///
  /// ```swift
  /// var interests: InstrumentInterests { .activities }
  /// ```
  public static let activities = InstrumentInterests(rawValue: 1 << 0)
  /// Every call-out into user code, with its start and end.
  ///
  /// ```swift
  /// var interests: InstrumentInterests { .callouts }
  /// ```
  public static let callouts = InstrumentInterests(rawValue: 1 << 1)
  /// Every sleep, with its start and end.
  ///
  /// ```swift
  /// var interests: InstrumentInterests { [.activities, .sleeps] }
  /// ```
  public static let sleeps = InstrumentInterests(rawValue: 1 << 2)
  /// The start of every call-out, as it begins (with ``callouts``, which reports its end):
  /// for an instrument that must know what a loop is doing while it does it, such as a stall
  /// watchdog. Not part of ``all``: a loop reports call-out starts only to the instruments
  /// that ask for them.
  ///
  /// ```swift
  /// var interests: InstrumentInterests { [.activities, .callouts, .calloutStarts] }
  /// ```
  public static let calloutStarts = InstrumentInterests(rawValue: 1 << 3)
  /// The context of the code that queues work (see
  /// ``RunLoopInstrument/captureContext()``), and each call-out run inside the context its
  /// work was queued in (see
  /// ``RunLoopInstrument/runLoop(_:callingOut:name:cause:context:_:_:)``): what a bridge to a
  /// distributed tracing system asks for, with ``callouts``, so that a call-out's span is a
  /// child of the code that caused it. Not part of ``all``; while no instrument asks for it,
  /// queueing work captures nothing and a call-out is not wrapped.
  ///
  /// ```swift
  /// var interests: InstrumentInterests { [.callouts, .contexts] }
  /// ```
  public static let contexts = InstrumentInterests(rawValue: 1 << 4)
  /// Activities, call-outs and sleeps.
  ///
  /// ```swift
  /// var interests: InstrumentInterests { .all }
  /// ```
  public static let all: InstrumentInterests = [.activities, .callouts, .sleeps]
}
