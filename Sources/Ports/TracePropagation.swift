import CRunLoopLinux
import Glibc
import RunLoopCore

/// How named ports carry call-out causes between processes (W3C trace context): a frame
/// sent from a traced call-out carries that call-out's span and its trace id; the server
/// runs the handler in a call-out whose cause is the sender's call-out, and the reply
/// carries the handler's span back to a call-out on the client that names it as its cause.
/// While nothing traces call-outs, frames carry no context and nothing here runs a clock.
enum TracePropagation {
  /// The trace context of a frame sent from this thread now: the running call-out's span
  /// and its trace id, or `nil` outside traced call-outs. A call-out that has no trace id yet
  /// starts a trace (a random 128-bit id, never all zero, as W3C requires) and keeps it for
  /// the rest of its run, so everything it sends belongs to one trace.
  static func outgoing() -> Frame.TraceContext? {
    let context = crl_current_callout_context()!
    guard context.pointee.span != 0 else { return nil }
    if context.pointee.trace_high == 0 && context.pointee.trace_low == 0 {
      var random = SystemRandomNumberGenerator()
      repeat {
        context.pointee.trace_high = random.next()
        context.pointee.trace_low = random.next()
      } while context.pointee.trace_high == 0 && context.pointee.trace_low == 0
    }
    return Frame.TraceContext(
      traceHigh: context.pointee.trace_high, traceLow: context.pointee.trace_low,
      spanID: context.pointee.span)
  }

  /// The cause a frame's trace context stands for: the sender's call-out, in process `pid`
  /// (named only when that is another process). The frame does not carry the sender's
  /// thread, so the cause's thread id is 0.
  static func cause(of context: Frame.TraceContext?, from pid: pid_t) -> CalloutCause? {
    guard let context else { return nil }
    return CalloutCause(
      span: context.spanID, threadID: 0, processID: pid == getpid() ? nil : pid,
      traceID: (context.traceHigh, context.traceLow))
  }

  /// Runs a server's handler for a message with `cause` in a call-out of `loop` (a port
  /// call-out named after the port, inside the connection's own call-out); returns its reply
  /// and the context the reply carries back: the same trace, the handler's span.
  static func handle(
    _ message: NamedPortMessage, on loop: EventRunLoop?, name: String,
    _ handler: (NamedPortMessage) -> [UInt8]?
  ) -> ([UInt8]?, Frame.TraceContext?) {
    guard let loop else { return (handler(message), nil) }
    var replySpan: UInt64 = 0
    let reply = loop.callOut(
      .port, name: message.expectsReply ? "\(name).request" : "\(name).message",
      cause: message.cause
    ) { () -> [UInt8]? in
      let reply = handler(message)
      replySpan = EventRunLoop.currentCalloutSpan
      return reply
    }
    guard let trace = message.cause?.traceID else { return (reply, nil) }
    return (
      reply, Frame.TraceContext(traceHigh: trace.high, traceLow: trace.low, spanID: replySpan)
    )
  }

  /// Reports a reply that came with `context` from process `pid`: inside a traced call-out,
  /// a port call-out named `NAME.reply`, nested in it, whose cause is the server's handler.
  static func receivedReply(_ context: Frame.TraceContext?, from pid: pid_t, name: String) {
    guard let context, context.spanID != 0, EventRunLoop.currentCalloutSpan != 0 else { return }
    EventRunLoop.current.callOut(.port, name: "\(name).reply", cause: cause(of: context, from: pid))
    {}
  }
}
