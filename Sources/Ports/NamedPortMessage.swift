import Glibc

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
  public let msgid: Int32
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

  /// Creates a message; the server makes these from frames.
  ///
  /// ```swift
  /// let message = NamedPortMessage(msgid: 1, data: [], expectsReply: false,
  ///                                peerPID: getpid(), peerUID: getuid())
  /// ```
  package init(msgid: Int32, data: [UInt8], expectsReply: Bool, peerPID: pid_t, peerUID: uid_t) {
    self.msgid = msgid
    self.data = data
    self.expectsReply = expectsReply
    self.peerPID = peerPID
    self.peerUID = peerUID
  }
}
