import CRunLoopLinux
import RunLoopCore
import Tracing

/// Makes each traced call-out of a run loop a span of swift-distributed-tracing, parented on
/// the `ServiceContext` of the code that caused it: the code that performed a block (plain,
/// awaited or delayed), created a timer, signalled a custom source or sent a port message,
/// or, for a named-port request from another process, the sender's span (carried in the
/// frame's W3C trace context and read back through the bootstrapped instrument's extractor).
///
/// Bootstrap an `InstrumentationSystem` first, then attach the spans to every loop:
///
/// ```swift
/// InstrumentationSystem.bootstrap(myTracer)
/// let spans = LoopSpans()
/// EventRunLoop.addProcessInstrument(spans)
/// try await withSpan("request") { _ in
///   try await worker.submit { handle() }  // its span is a child of "request"
/// }
/// ```
///
/// Inside the call-out, `ServiceContext.current` is its span's context, which carries the
/// caller's baggage. Each span is named after the call-out and carries these attributes:
/// `runloop.callout.kind`, `runloop.loop`, `thread.id`, `runloop.mode`, `runloop.depth` (how
/// deep in nested runs), `runloop.iteration` (the pass) and `runloop.step` (the step of the
/// sequence of events that made the call-out, 1 to 10). A
/// ``/RunLoopObservers/StallWatchdog`` that reports to the spans (see ``report(_:)``) adds a
/// `runloop.stall` event to the span of the call-out that stalled.
///
/// When the tracer propagates W3C trace context (`traceparent`), the loop takes the span's
/// ids as the call-out's own: the JSON log, journald and named-port frames then name the
/// spans the tracing backend shows. A tracer with another format can name its ids through
/// ``init(identify:)``.
public final class LoopSpans: RunLoopInstrument {
  /// Call-outs and contexts.
  ///
  /// ```swift
  /// LoopSpans().interests  // [.callouts, .contexts]
  /// ```
  public var interests: InstrumentInterests { [.callouts, .contexts] }

  private let identify: @Sendable (ServiceContext) -> CalloutIdentity?
  // The spans of the call-outs running on each loop, innermost last: where a stall report,
  // made on the watchdog's thread, finds the span of the call-out that stalled.
  let running = GuardedState<[UInt64: [any Span]]>([:])

  /// Creates the spans' instrument. `identify` reads a span's ids from its context (the
  /// default injects the context with the bootstrapped instrument and reads the W3C
  /// `traceparent` it wrote); when it returns `nil`, the loop keeps ids of its own.
  ///
  /// ```swift
  /// let spans = LoopSpans()
  /// EventRunLoop.addProcessInstrument(spans)
  /// ```
  public init(
    identify: @escaping @Sendable (ServiceContext) -> CalloutIdentity? = LoopSpans.traceParentIDs
  ) {
    self.identify = identify
  }

  /// The calling task's (or thread's) `ServiceContext`, as work is queued.
  ///
  /// ```swift
  /// let context = spans.captureContext() as? ServiceContext
  /// ```
  public func captureContext() -> (any Sendable)? { ServiceContext.current }

  /// Runs the call-out as a span: a child of the context captured when its work was queued,
  /// else of the span its cause names (work from another process), else of the current
  /// context (a call-out of a nested run), else a new trace.
  ///
  /// ```swift
  /// // Called by the loop for every call-out while the spans are attached.
  /// ```
  public func runLoop<Result, Failure: Error>(
    _ loop: EventRunLoop, callingOut kind: CalloutKind, name: String, cause: CalloutCause?,
    context: (any Sendable)?, _ info: LoopPassInfo,
    _ body: (CalloutIdentity?) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    let span = InstrumentationSystem.tracer.startSpan(
      name, context: parent(captured: context, cause: cause), ofKind: .internal)
    span.attributes["runloop.callout.kind"] = kind.name
    span.attributes["runloop.loop"] = Int64(bitPattern: info.loopID)
    span.attributes["thread.id"] = Int64(crl_current_tid())
    span.attributes["runloop.mode"] = info.mode.name
    span.attributes["runloop.depth"] = info.depth
    span.attributes["runloop.iteration"] = Int64(bitPattern: info.iteration)
    span.attributes["runloop.step"] = info.step
    running.withLock { $0[info.loopID, default: []].append(span) }
    defer {
      running.withLock { open in
        open[info.loopID]?.removeLast()
        if open[info.loopID]?.isEmpty == true { open[info.loopID] = nil }
      }
      span.end()
    }
    let context = span.context
    let identity = identify(context)
    let result = ServiceContext.withValue(context) {
      Swift.Result { () throws(Failure) -> Result in try body(identity) }
    }
    return try result.get()
  }

  private func parent(captured: (any Sendable)?, cause: CalloutCause?) -> ServiceContext {
    if let captured = captured as? ServiceContext { return captured }
    if let cause, let trace = cause.traceID, cause.span != 0 {
      var context = ServiceContext.topLevel
      let carrier = [TraceParent.key: TraceParent.format(trace: trace, span: cause.span)]
      InstrumentationSystem.instrument.extract(carrier, into: &context, using: HeaderExtractor())
      return context
    }
    return ServiceContext.current ?? .topLevel
  }

  /// A span's ids as the bootstrapped instrument propagates them in W3C trace context: it
  /// injects `context` and reads the `traceparent` header it wrote; `nil` if it wrote none.
  ///
  /// ```swift
  /// let spans = LoopSpans(identify: LoopSpans.traceParentIDs)
  /// ```
  public static func traceParentIDs(_ context: ServiceContext) -> CalloutIdentity? {
    var carrier: [String: String] = [:]
    InstrumentationSystem.instrument.inject(context, into: &carrier, using: HeaderInjector())
    return carrier[TraceParent.key].flatMap(TraceParent.parse)
  }
}
