import CRunLoopLinux
import Glibc
import Synchronization

/// Where the work a call-out runs came from: the call-out, thread and loop that queued the
/// perform request, signalled the source, sent the port message or enqueued the job.
///
/// A loop records causes only while some instrument traces call-outs; the call-out that
/// runs the effect then reports its cause in ``CalloutRecord/cause``, next to its own
/// ``CalloutRecord/span``, so a trace can link the two.
///
/// ```swift
/// final class Links: RunLoopInstrument {
///   var interests: InstrumentInterests { .callouts }
///   func runLoop(_ loop: EventRunLoop, didCallOut record: CalloutRecord, _ info: LoopPassInfo) {
///     guard let cause = record.cause else { return }
///     print("\(record.name) was caused by span \(cause.span) on thread \(cause.threadID)")
///   }
/// }
/// ```
public struct CalloutCause: Sendable, Hashable {
  /// The span of the call-out that made the effect, or 0 if it was made outside any
  /// call-out (from a plain thread, or from a loop's thread between call-outs).
  ///
  /// ```swift
  /// let fromCallout = cause.span != 0
  /// ```
  public let span: UInt64
  // Stored without optionals, 0 standing for "none" (loop ids and process ids start at 1),
  // and the words first, so a cause is 40 bytes: it travels in every traced record of an
  // effect.
  private let loop: UInt64
  // The W3C trace id as two words; both 0 when the cause came without one.
  private let traceHigh: UInt64
  private let traceLow: UInt64
  /// The kernel thread id of the thread that made it.
  ///
  /// ```swift
  /// print("signalled from thread \(cause.threadID)")
  /// ```
  public let threadID: pid_t
  /// The ``EventRunLoop/id`` of the loop whose thread made it; `nil` if the thread has no
  /// loop.
  ///
  /// ```swift
  /// if cause.loopID == nil { print("from a plain thread") }
  /// ```
  public var loopID: UInt64? { loop == 0 ? nil : loop }
  /// The process it came from, set only when that is another process (a message between
  /// processes).
  ///
  /// ```swift
  /// if let pid = cause.processID { print("sent by process \(pid)") }
  /// ```
  public var processID: Int32? { process == 0 ? nil : process }
  private let process: Int32

  /// Creates a cause; the loop captures one when work is queued (see ``capture()``), and a
  /// port carries it across processes.
  package init(
    span: UInt64, threadID: pid_t, loopID: UInt64? = nil, processID: Int32? = nil,
    traceID: (high: UInt64, low: UInt64)? = nil
  ) {
    self.span = span
    self.threadID = threadID
    self.loop = loopID ?? 0
    self.process = processID ?? 0
    self.traceHigh = traceID?.high ?? 0
    self.traceLow = traceID?.low ?? 0
  }

  /// The W3C trace id (128 bits, printed as 32 hex digits) the cause came with, if any:
  /// from another process's trace context, or inherited from the call-out that made it.
  ///
  /// ```swift
  /// if let trace = cause.traceID { print(String(trace.high, radix: 16)) }
  /// ```
  public var traceID: (high: UInt64, low: UInt64)? {
    traceHigh == 0 && traceLow == 0 ? nil : (traceHigh, traceLow)
  }
}

extension CalloutCause {
  /// The cause of whatever the calling thread queues now: the call-out it is running (if
  /// any), its thread id, its loop, and the trace that call-out belongs to. Costs a
  /// thread-local read and, outside call-outs, one look-up of the thread's loop.
  package static func capture() -> CalloutCause {
    let context = crl_current_callout_context().pointee
    let loopID = context.loop != 0 ? context.loop : EventRunLoop.idOfCurrentThreadsLoop()
    return CalloutCause(
      span: context.span, threadID: crl_current_tid(), loopID: loopID,
      traceID: context.trace_high == 0 && context.trace_low == 0
        ? nil : (context.trace_high, context.trace_low))
  }

  /// ``capture()`` and the contexts the context instruments capture, when some instrument
  /// that traces call-outs captured one (see ``InstrumentInterests/contexts``; one relaxed
  /// atomic load while none asks for them), `nil` otherwise: for work that keeps its cause
  /// only to run in its context (a timer, made now, fired later).
  package static func captureIfContexts() -> (cause: CalloutCause, contexts: CapturedContexts)? {
    guard calloutInstrumentCount.load(ordering: .relaxed) > 0,
      let contexts = CapturedContexts.captureIfWanted()
    else { return nil }
    return (capture(), contexts)
  }

  /// ``capture()`` when some instrument traces call-outs (one relaxed atomic load), `nil`
  /// otherwise: what a queue records for the call-out that later runs the effect.
  package static func captureIfTracing() -> CalloutCause? {
    calloutInstrumentCount.load(ordering: .relaxed) > 0 ? capture() : nil
  }
}

extension EventRunLoop {
  /// The span of the call-out running on the calling thread, or 0 outside call-outs (and
  /// always 0 while nothing traces call-outs).
  ///
  /// ```swift
  /// let parent = EventRunLoop.currentCalloutSpan  // the parent id of a trace context
  /// ```
  package static var currentCalloutSpan: UInt64 { crl_current_callout_context().pointee.span }

  /// The trace id of the call-out running on the calling thread (from its cause), if any.
  package static var currentTraceID: (high: UInt64, low: UInt64)? {
    let context = crl_current_callout_context().pointee
    return context.trace_high == 0 && context.trace_low == 0
      ? nil : (context.trace_high, context.trace_low)
  }

  /// The id of the calling thread's loop, if it has one, without creating one.
  static func idOfCurrentThreadsLoop() -> UInt64? {
    if crl_current_tid() == getpid() {
      let main = mainLoopID.load(ordering: .relaxed)
      return main == 0 ? nil : main
    }
    guard let stored = pthread_getspecific(currentLoopKey) else { return nil }
    return Unmanaged<EventRunLoop>.fromOpaque(stored).takeUnretainedValue().id
  }
}

/// The main loop's id once it exists (0 before): read by causes captured on the main thread,
/// which must not create the main loop to learn it.
let mainLoopID = Atomic<UInt64>(0)

extension UInt64 {
  /// The id as a span is printed: 16 lowercase hex digits.
  package var spanHex: String {
    let digits = String(self, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }

  /// Parses 16 hex digits (a span as printed); `nil` for anything else.
  package init?(spanHex text: some StringProtocol) {
    guard text.utf8.count == 16, let value = UInt64(text, radix: 16) else { return nil }
    self = value
  }
}

/// When a piece of work was queued (a `LoopClock` reading) and who queued it: a job, a
/// perform request, an in-process port message. Recorded only while some instrument wants
/// call-outs, and reported by the work's call-out as its due time and cause, so that the
/// queue-to-run delay shows in traces and metrics.
package struct CauseStamp: Sendable {
  package let queuedAt: Int64
  package let cause: CalloutCause

  /// A stamp for work queued now if some instrument wants call-outs (one relaxed atomic
  /// load), else `nil`.
  package static func ifTracing() -> CauseStamp? {
    guard let cause = CalloutCause.captureIfTracing() else { return nil }
    return CauseStamp(queuedAt: LoopClock.now(), cause: cause)
  }
}

/// A ``CauseStamp`` held by reference: what a perform request or a port message keeps, so
/// that one queued while nothing traces call-outs carries one word for it, not a whole stamp.
package final class CapturedCause: Sendable {
  package let stamp: CauseStamp
  /// What the context instruments captured as the work was queued (see
  /// ``InstrumentInterests/contexts``).
  package let contexts: CapturedContexts?

  /// Boxes a stamp for work queued now if some instrument wants call-outs, else `nil`.
  package static func ifTracing() -> CapturedCause? {
    CauseStamp.ifTracing().map { CapturedCause($0, contexts: CapturedContexts.captureIfWanted()) }
  }

  private init(_ stamp: CauseStamp, contexts: CapturedContexts?) {
    self.stamp = stamp
    self.contexts = contexts
  }
}
