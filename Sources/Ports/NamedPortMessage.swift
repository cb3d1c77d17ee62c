import Glibc
import RunLoopCore

/// A message a ``NamedPortServer`` received: what the sender sent and who sent it (from the
/// kernel's `SO_PEERCRED`, so it cannot be forged).
///
/// ```swift
/// let server = try NamedPortServer(name: "com.example.main") { message in
///   print("\(message.msgid) from pid \(message.peerPID)")
///   return message.expectsReply ? Array("ok".utf8) : nil
/// }
/// ```
public struct NamedPortMessage: Sendable, Hashable {
  /// The message id the sender chose.
  ///
  /// ```swift
  /// switch message.msgid { case 100: checkIn(message); default: break }
  /// ```
  public let msgid: PortMessageID
  /// The payload.
  ///
  /// ```swift
  /// let name = String(decoding: message.data, as: UTF8.self)
  /// ```
  public let data: [UInt8]
  /// Whether the sender waits for a reply (a request) or not (a one-way send).
  ///
  /// ```swift
  /// return message.expectsReply ? Array("ok".utf8) : nil
  /// ```
  public let expectsReply: Bool
  /// The sending process.
  ///
  /// ```swift
  /// print("from pid \(message.peerPID)")
  /// ```
  public let peerPID: pid_t
  /// The sending process's user id.
  ///
  /// ```swift
  /// assert(message.peerUID == getuid())
  /// ```
  public let peerUID: uid_t
  /// Where the message came from, when its frame carried the sender's trace context
  /// (version 2, sent from a traced call-out): the sending call-out's span, the sending
  /// process (when it is another one) and the W3C trace id; thread id 0, since frames do
  /// not carry the thread. `nil`
  /// for a version-1 frame or a sender outside traced call-outs. The server's call-out
  /// that runs the handler reports it as its ``/RunLoopCore/CalloutRecord/cause``.
  ///
  /// ```swift
  /// if let trace = message.cause?.traceID { print(String(trace.high, radix: 16)) }
  /// ```
  public let cause: CalloutCause?

  /// Creates a message; the server makes these from frames.
  ///
  /// ```swift
  /// let message = NamedPortMessage(msgid: 1, data: [], expectsReply: false,
  ///                                peerPID: getpid(), peerUID: getuid())
  /// ```
  package init(
    msgid: PortMessageID, data: [UInt8], expectsReply: Bool, peerPID: pid_t, peerUID: uid_t,
    cause: CalloutCause? = nil
  ) {
    self.msgid = msgid
    self.data = data
    self.expectsReply = expectsReply
    self.peerPID = peerPID
    self.peerUID = peerUID
    self.cause = cause
  }
}
