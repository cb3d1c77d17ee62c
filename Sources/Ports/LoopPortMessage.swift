import RunLoopCore

/// A message for an ``InProcessPort``, the role of Foundation's `NSPortMessage`: a message
/// id, components (byte buffers), and optionally the ports involved.
///
/// As with `NSPortMessage`, the ports swap meaning on delivery:
/// - when you send, ``sendPort`` is the port the message goes to and ``receivePort`` the
///   port on which replies should arrive (usually one of yours);
/// - in the handler, ``sendPort`` is the port to send replies to (the sender's
///   `receivePort`) and ``receivePort`` is the port the message arrived on.
///
/// That is why the guide's check-in handler (Listing 3-13) reads the worker's port from
/// `sendPort`.
///
/// ```swift
/// let checkIn = LoopPortMessage(msgid: 100, sendPort: mainPort, receivePort: workerPort)
/// try checkIn.send(before: .now + .seconds(1))
/// ```
public struct LoopPortMessage: Sendable {
  /// The message id (`msgid`), for the receiver to tell messages apart.
  ///
  /// ```swift
  /// if message.msgid == 100 { print("check-in") }
  /// ```
  public var msgid: PortMessageID
  /// The message's data, as a list of byte buffers.
  ///
  /// ```swift
  /// let text = String(decoding: message.components[0], as: UTF8.self)
  /// ```
  public var components: [[UInt8]]
  /// Outgoing: where the message goes. Incoming: where replies should go.
  ///
  /// ```swift
  /// try message.sendPort?.send(msgid: 201, before: .now + .seconds(1))
  /// ```
  public var sendPort: InProcessPort?
  /// Outgoing: where replies should arrive. Incoming: the port the message arrived on.
  ///
  /// ```swift
  /// message.receivePort?.invalidate()  // stop listening after this one
  /// ```
  public var receivePort: InProcessPort?
  // When it was sent and who sent it, recorded only while some instrument wants call-outs
  // (see `CauseStamp`); the receiving call-out reports them as its due time and cause.
  var stamp: CapturedCause?

  /// Creates a message.
  ///
  /// ```swift
  /// let message = LoopPortMessage(msgid: 7, components: [Array("hello".utf8)])
  /// ```
  public init(
    msgid: PortMessageID = 0, components: [[UInt8]] = [], sendPort: InProcessPort? = nil,
    receivePort: InProcessPort? = nil
  ) {
    self.msgid = msgid
    self.components = components
    self.sendPort = sendPort
    self.receivePort = receivePort
  }

  /// Sends the message to ``sendPort`` (Foundation's `sendBeforeDate:`).
  ///
  /// ```swift
  /// try message.send(before: .now + .milliseconds(100))
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` without a ``sendPort``; otherwise
  ///   what ``InProcessPort/send(_:before:)`` throws.
  public func send(before deadline: ContinuousClock.Instant) throws(RunLoopError) {
    guard let sendPort else {
      throw .invalidArgument("message \(msgid) has no send port to go to")
    }
    try sendPort.send(self, before: deadline)
  }
}
