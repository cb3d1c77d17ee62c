import Synchronization

/// The contexts the instruments that ask for ``InstrumentInterests/contexts`` captured as
/// work was queued (see ``RunLoopInstrument/captureContext()``), each kept with the
/// instrument that captured it: queued work holds one reference to it beside its cause (not
/// in the cause, which stays a plain value that traces copy without reference counting),
/// `nil` while no instrument asks for contexts.
package final class CapturedContexts: Sendable {
  private let entries: [(instrument: ObjectIdentifier, context: any Sendable)]

  private init(_ entries: [(instrument: ObjectIdentifier, context: any Sendable)]) {
    self.entries = entries
  }

  /// The context `instrument` captured, if it captured one.
  func context(capturedBy instrument: any RunLoopInstrument) -> (any Sendable)? {
    let id = ObjectIdentifier(instrument)
    return entries.first { $0.instrument == id }?.context
  }

  /// What the context instruments capture on the calling thread now; `nil` while none is
  /// attached (one relaxed atomic load) or none captured anything.
  static func captureIfWanted() -> CapturedContexts? {
    guard contextInstrumentCount.load(ordering: .relaxed) > 0 else { return nil }
    let instruments = contextInstruments.withLock { $0 }
    var entries: [(instrument: ObjectIdentifier, context: any Sendable)] = []
    for instrument in instruments {
      let id = ObjectIdentifier(instrument)
      guard !entries.contains(where: { $0.instrument == id }),
        let context = instrument.captureContext()
      else { continue }
      entries.append((id, context))
    }
    return entries.isEmpty ? nil : CapturedContexts(entries)
  }
}

/// The instruments that ask for contexts, wherever they are attached (an instrument attached
/// to two loops is here twice): whoever queues work asks each of them for its context, since
/// the loop the work goes to may not have its instrument list at hand. Captured without the
/// loop's lock, so work is queued in the contexts of the instruments attached at the time.
let contextInstruments = GuardedState<[any RunLoopInstrument]>([])
/// How many entries ``contextInstruments`` holds; while 0, queueing work captures nothing.
let contextInstrumentCount = Atomic<Int>(0)
