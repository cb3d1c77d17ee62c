/// Something that listens to a run loop from inside: the extension point through which the
/// Observers module sees the loop's activities, call-outs and sleeps.
///
/// The loop calls an instrument on its own thread, with no lock held, so an instrument may
/// call back into the loop (add an observer, perform a block, even run the loop nested).
/// Attach one to a single loop with ``EventRunLoop/addInstrument(_:)`` or to every loop of
/// the process with ``EventRunLoop/addProcessInstrument(_:)``.
///
/// ```swift
/// final class Printer: RunLoopInstrument {
///   var interests: InstrumentInterests { .activities }
///   func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
///     print(info.iteration, activity)
///   }
/// }
/// EventRunLoop.current.addInstrument(Printer())
/// ```
public protocol RunLoopInstrument: AnyObject, Sendable {
  /// What the instrument wants to hear about. Read when the instrument is added.
  var interests: InstrumentInterests { get }

  /// Instruments with a lower order hear each event first; equal orders hear it in the order
  /// they were attached. Recorders (tracers, metrics) keep the default, 0, so that they record
  /// an activity before the observer registry (which runs user code, and uses a higher
  /// order) reacts to it.
  var notificationOrder: Int { get }

  /// The loop's thread exited: the loop has detached the instrument. A chance to drop
  /// whatever the instrument keeps for that loop. Called on the exiting thread, with no
  /// lock held.
  func runLoopThreadDidExit(_ loop: EventRunLoop)

  /// The loop reached one of the six activities of the sequence of events.
  func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo)

  /// The loop is about to call out into user code (only for an instrument whose
  /// ``interests`` include ``InstrumentInterests/calloutStarts``).
  func runLoop(
    _ loop: EventRunLoop, willCallOut kind: CalloutKind, name: String, _ info: LoopPassInfo)

  /// The loop returned from a call-out into user code.
  func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo)

  /// The loop woke from a sleep that began at `start`.
  func runLoop(
    _ loop: EventRunLoop, didSleepFrom start: ContinuousClock.Instant,
    to end: ContinuousClock.Instant, _ info: LoopPassInfo)

  /// The context of the calling thread's code, captured as it queues work for a loop: a
  /// perform request (plain, awaited or delayed), a timer it creates, a custom source it
  /// signals, an in-process port message it sends. The call-out that later runs the work
  /// hands it back (see ``runLoop(_:callingOut:name:cause:context:_:_:)``). Asked only of an
  /// instrument whose ``interests`` include ``InstrumentInterests/contexts``, on the thread
  /// that queues the work, whichever loop the work goes to; keep it cheap (a task-local
  /// read).
  func captureContext() -> (any Sendable)?

  /// Runs a call-out inside the context of the code that caused it (only for an instrument
  /// whose ``interests`` include ``InstrumentInterests/contexts``): the instrument binds
  /// `context`, the one it captured when the work was queued (`nil` if it captured none, or
  /// if the work came from another process: it may then derive one from the `cause`'s trace
  /// id and span), calls `body` once,
  /// and may hand it the ids its tracing system gave the call-out, which the loop then uses
  /// as the call-out's span and trace (``CalloutRecord/span``, ``CalloutRecord/traceID``).
  /// Called on the loop's thread, with no lock held; `body` times and reports the call-out,
  /// so what the instrument does around it is not part of the call-out's duration.
  func runLoop<Result, Failure: Error>(
    _ loop: EventRunLoop, callingOut kind: CalloutKind, name: String, cause: CalloutCause?,
    context: (any Sendable)?, _ info: LoopPassInfo,
    _ body: (CalloutIdentity?) throws(Failure) -> Result
  ) throws(Failure) -> Result
}

extension RunLoopInstrument {
  /// 0: recorders hear events before observers react to them.
  ///
  /// ```swift
  /// var notificationOrder: Int { 100 }  // hear events after the recorders
  /// ```
  public var notificationOrder: Int { 0 }

  /// Does nothing: an instrument that keeps no per-loop state need not implement it.
  ///
  /// ```swift
  /// func runLoopThreadDidExit(_ loop: EventRunLoop) { counts.withLock { $0[loop.id] = nil } }
  /// ```
  public func runLoopThreadDidExit(_ loop: EventRunLoop) {}

  /// Does nothing: an instrument that does not want activities need not implement it.
  ///
  /// ```swift
  /// func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
  ///   print(info.iteration, activity)
  /// }
  /// ```
  public func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
  }

  /// Does nothing: an instrument that does not want call-out starts need not implement it.
  ///
  /// ```swift
  /// func runLoop(
  ///   _ loop: EventRunLoop, willCallOut kind: CalloutKind, name: String, _ info: LoopPassInfo
  /// ) { current.withLock { $0[loop.id] = name } }
  /// ```
  public func runLoop(
    _ loop: EventRunLoop, willCallOut kind: CalloutKind, name: String, _ info: LoopPassInfo
  ) {}

  /// Does nothing: an instrument that does not want call-outs need not implement it.
  ///
  /// ```swift
  /// func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo) {
  ///   print(callout.name, callout.duration)
  /// }
  /// ```
  public func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo)
  {}

  /// Does nothing: an instrument that does not want sleeps need not implement it.
  ///
  /// ```swift
  /// func runLoop(
  ///   _ loop: EventRunLoop, didSleepFrom start: ContinuousClock.Instant,
  ///   to end: ContinuousClock.Instant, _ info: LoopPassInfo
  /// ) { print("slept", end - start) }
  /// ```
  public func runLoop(
    _ loop: EventRunLoop, didSleepFrom start: ContinuousClock.Instant,
    to end: ContinuousClock.Instant, _ info: LoopPassInfo
  ) {}

  /// Captures nothing: an instrument that does not ask for contexts need not implement it.
  ///
  /// ```swift
  /// func captureContext() -> (any Sendable)? { ServiceContext.current }
  /// ```
  public func captureContext() -> (any Sendable)? { nil }

  /// Runs `body` with no identity: an instrument that does not ask for contexts need not
  /// implement it.
  ///
  /// ```swift
  /// func runLoop<Result, Failure: Error>(
  ///   _ loop: EventRunLoop, callingOut kind: CalloutKind, name: String, cause: CalloutCause?,
  ///   context: (any Sendable)?, _ info: LoopPassInfo,
  ///   _ body: (CalloutIdentity?) throws(Failure) -> Result
  /// ) throws(Failure) -> Result {
  ///   let request = context as? String
  ///   print("\(name) runs for request \(request ?? "none")")
  ///   return try body(nil)
  /// }
  /// ```
  public func runLoop<Result, Failure: Error>(
    _ loop: EventRunLoop, callingOut kind: CalloutKind, name: String, cause: CalloutCause?,
    context: (any Sendable)?, _ info: LoopPassInfo,
    _ body: (CalloutIdentity?) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    try body(nil)
  }
}
