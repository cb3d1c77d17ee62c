import Glibc
import RunLoopCore

/// How named ports carry call-out causes between processes: the trace context a frame
/// carries out, and the call-outs that report where a received frame came from.
enum _TracePropagation {
  /// The trace context of a frame sent from this thread now.
  static func outgoing() -> _Frame.TraceContext? { nil }

  /// Runs a server's handler for a frame that came with `context` from process `pid`;
  /// returns its reply and the context the reply carries back.
  static func handle(
    _ context: _Frame.TraceContext?, from pid: pid_t, name: String, _ body: () -> [UInt8]?
  ) -> ([UInt8]?, _Frame.TraceContext?) {
    (body(), nil)
  }

  /// Reports a reply that came with `context` from process `pid`.
  static func receivedReply(_ context: _Frame.TraceContext?, from pid: pid_t, name: String) {}
}
