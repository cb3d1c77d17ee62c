/// The flow arrows of a Chrome trace: from the call-out that caused an effect (a perform
/// request queued, a source signalled, a port message sent, in this process or another) to
/// the call-out that ran it, matched by the effect's `cause_span` and `cause_pid` (its own
/// process when absent) against the spans of call-out records, across every log exported
/// together.
///
/// Two passes over the logs keep memory to the effects: the first (``index(_:)``) notes each
/// call-out that has a cause, where it starts and which span it names; the second
/// (``starts(at:_:)``, while the slices are written) starts one flow at each causing
/// call-out for each of its effects, and ``finish(_:)`` ends the flows whose cause was found
/// at their effects. An effect whose cause is in no log gets no arrow.
struct _ChromeFlows {
  /// A call-out as the logs name it: its process and its span.
  private struct Slice: Hashable {
    var pid: Int32
    var span: String
  }

  /// Where an effect's slice starts, and whether its cause was found.
  private struct Effect {
    var pid: Int32
    var tid: Int32
    var timestamp: Int64
    var trace: String?
    var found = false
  }

  // A cause made outside any call-out: there is no slice to start an arrow at.
  private static let noSpan = "0000000000000000"

  private var effects: [Effect] = []
  // The effects (indices into `effects`) of each causing call-out.
  private var effectsOfCause: [Slice: [Int]] = [:]

  /// How many arrows ``finish(_:)`` drew.
  private(set) var drawn = 0

  /// First pass: notes `record` if it is a call-out with a cause.
  mutating func index(_ record: TraceRecord) {
    guard record.record == .callout, let causeSpan = record.causeSpan,
      causeSpan != Self.noSpan
    else { return }
    let cause = Slice(pid: record.causePid ?? record.pid, span: causeSpan)
    effectsOfCause[cause, default: []].append(effects.count)
    effects.append(
      Effect(
        pid: record.pid, tid: record.tid, timestamp: record.timestamp, trace: record.trace))
  }

  /// Second pass: when `record` is a call-out that caused effects, starts a flow (`s`) at
  /// its start for each of them.
  mutating func starts(at record: TraceRecord, _ emit: (_ChromeEvent) -> Void) {
    guard record.record == .callout, let span = record.span,
      let indices = effectsOfCause[Slice(pid: record.pid, span: span)]
    else { return }
    for index in indices {
      effects[index].found = true
      emit(
        Self.event(
          "s", id: index, pid: record.pid, tid: record.tid, timestamp: record.timestamp,
          trace: effects[index].trace))
    }
    // A span names one call-out: a second record with it (a log exported twice) adds no
    // second start.
    effectsOfCause[Slice(pid: record.pid, span: span)] = nil
  }

  /// Ends each flow whose cause was found, at the start of its effect's slice (`f`, bound to
  /// the enclosing slice).
  mutating func finish(_ emit: (_ChromeEvent) -> Void) {
    for (index, effect) in effects.enumerated() where effect.found {
      emit(
        Self.event(
          "f", id: index, pid: effect.pid, tid: effect.tid, timestamp: effect.timestamp,
          trace: effect.trace))
      drawn += 1
    }
    effects.removeAll()
    effectsOfCause.removeAll()
  }

  private static func event(
    _ phase: String, id: Int, pid: Int32, tid: Int32, timestamp: Int64, trace: String?
  ) -> _ChromeEvent {
    var fields: [(String, _ChromeEvent.Value)] = [
      ("ph", .string(phase)), ("name", .string("cause")), ("cat", .string("flow")),
      ("id", .int(id + 1)), ("pid", .int(Int(pid))), ("tid", .int(Int(tid))),
      ("ts", .double(ChromeTrace.microseconds(timestamp))),
    ]
    if phase == "f" { fields.append(("bp", .string("e"))) }
    return _ChromeEvent(fields: fields, args: trace.map { [("trace", .string($0))] })
  }
}
