/// A message that reached a ``NamedPortServer`` serving an `AsyncSequence` (see
/// ``NamedPortServer/requests(name:registry:on:mode:capacity:maxMessageSize:allowedUIDs:)``):
/// a request, whose client waits for ``reply(_:)``, or a one-way message, which needs none.
///
/// A request is answered exactly once: by ``reply(_:)`` (from any thread or task), or by a
/// failure frame, so its client never hangs: a request the consumer took and released
/// without a reply fails with code `requestDropped`, and one still waiting when the
/// consumer ended (in its hands or in the sequence's buffer) with code `serverStopped`
/// (both ``RunLoopCore/RunLoopError`` codes of the client's `request`). Only the first
/// answer counts.
///
/// ```swift
/// for await request in requests {
///   guard request.expectsReply else { log(request.message); continue }
///   request.reply(Array("pong".utf8))
/// }
/// ```
public final class NamedPortRequest: Sendable {
  /// What the client sent, and who it is.
  ///
  /// ```swift
  /// print(request.message.msgid, "from pid", request.message.peerPID)
  /// ```
  public let message: NamedPortMessage
  // The server's book of requests waiting for their answer, and this one's entry there
  // (nil for a one-way message).
  private let book: RequestBook
  private let ticket: UInt64?

  init(message: NamedPortMessage, book: RequestBook, ticket: UInt64?) {
    self.message = message
    self.book = book
    self.ticket = ticket
  }

  deinit {
    if let ticket { book.dropped(ticket) }
  }

  /// Whether the client waits for a reply (a request) or not (a one-way message).
  ///
  /// ```swift
  /// if request.expectsReply { request.reply([]) }
  /// ```
  public var expectsReply: Bool { ticket != nil }

  /// Sends `data` to the waiting client, from any thread or task. The reply leaves on the
  /// server loop's thread (at once there, otherwise on its next pass in the server's
  /// modes). A reply larger than the server's `maxMessageSize` reaches the client as a
  /// `messageTooLarge` failure instead.
  ///
  /// ```swift
  /// let accepted = request.reply(Array("done".utf8))
  /// ```
  ///
  /// - Returns: `false` when there is no one to answer: a one-way message, a request
  ///   already answered, one the server answered itself because its consumer ended, or one
  ///   whose server was invalidated before the reply.
  @discardableResult
  public func reply(_ data: [UInt8] = []) -> Bool {
    guard let ticket else { return false }
    return book.answer(ticket, with: .success(data))
  }
}
