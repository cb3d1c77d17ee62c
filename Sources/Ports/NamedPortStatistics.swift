/// What a ``NamedPortServer`` has seen, for monitoring and tests.
///
/// ```swift
/// let stats = server.statistics
/// print("\(stats.messagesHandled) handled, \(stats.framesRejected) bad frames")
/// ```
public struct NamedPortStatistics: Sendable, Hashable {
  /// Connections accepted from allowed peers.
  ///
  /// ```swift
  /// print(server.statistics.connectionsAccepted)
  /// ```
  public var connectionsAccepted = 0
  /// Connections refused because of the peer's user id.
  ///
  /// ```swift
  /// if server.statistics.peersRefused > 0 { print("someone else knocked") }
  /// ```
  public var peersRefused = 0
  /// Messages (one-way and requests) handed to the handler; for a server serving a
  /// requests sequence, offered to the sequence, including those it refused
  /// (``requestsRefusedBusy``, ``messagesDroppedBusy``).
  ///
  /// ```swift
  /// print(server.statistics.messagesHandled)
  /// ```
  public var messagesHandled = 0
  /// Connections dropped for a malformed, oversized or truncated frame.
  ///
  /// ```swift
  /// print(server.statistics.framesRejected)
  /// ```
  public var framesRejected = 0
  /// Connections refused because ``NamedPortServer/maxConnections`` were already open.
  ///
  /// ```swift
  /// if server.statistics.connectionsRefusedAtCap > 0 { print("raise maxConnections") }
  /// ```
  public var connectionsRefusedAtCap = 0
  /// Times accepting paused because `accept` failed for lack of descriptors or memory
  /// (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`); each pause lasts about 100 ms.
  ///
  /// ```swift
  /// if server.statistics.acceptPauses > 0 { print("raise the descriptor limit") }
  /// ```
  public var acceptPauses = 0
  /// Connections closed because they stayed open with no message under way for
  /// ``NamedPortServer/idleTimeout``.
  ///
  /// ```swift
  /// print("\(server.statistics.connectionsClosedIdle) idle connections closed")
  /// ```
  public var connectionsClosedIdle = 0
  /// Connections dropped because a frame did not arrive whole within
  /// ``NamedPortServer/frameTimeout`` (a client that stalled in the middle of a frame).
  ///
  /// ```swift
  /// if server.statistics.framesTimedOut > 0 { print("a client stalled mid-frame") }
  /// ```
  public var framesTimedOut = 0
  /// Bytes the server holds right now for all its connections: unfinished frames and
  /// replies not yet taken by their clients. After each read it is at most
  /// ``NamedPortServer/maxBufferedBytes``; during one, it can go over by what that read
  /// brings (64 KiB and the replies to its requests) before the connection is dropped.
  ///
  /// ```swift
  /// print("\(server.statistics.bufferedBytes) bytes held")
  /// ```
  public var bufferedBytes = 0
  /// Connections dropped because what they held took ``bufferedBytes`` above
  /// ``NamedPortServer/maxBufferedBytes``.
  ///
  /// ```swift
  /// if server.statistics.connectionsDroppedAtBufferLimit > 0 { print("memory cap reached") }
  /// ```
  public var connectionsDroppedAtBufferLimit = 0
  /// Connections dropped because their client left more than four largest replies
  /// (4 × ``NamedPortServer/maxMessageSize`` + 4 KiB) unread: their replies are lost.
  ///
  /// ```swift
  /// if server.statistics.connectionsDroppedForUnreadReplies > 0 { print("a deaf client") }
  /// ```
  public var connectionsDroppedForUnreadReplies = 0

  /// Requests of a ``NamedPortServer/requests(name:registry:on:mode:capacity:maxMessageSize:allowedUIDs:)``
  /// sequence refused with a `serverBusy` failure because its buffer was full.
  ///
  /// ```swift
  /// if server.statistics.requestsRefusedBusy > 0 { print("the consumer falls behind") }
  /// ```
  public var requestsRefusedBusy = 0
  /// One-way messages of a requests sequence dropped because its buffer was full.
  ///
  /// ```swift
  /// print("\(server.statistics.messagesDroppedBusy) one-way messages dropped")
  /// ```
  public var messagesDroppedBusy = 0
  /// Requests of a requests sequence released without a reply; each client got a
  /// `requestDropped` failure.
  ///
  /// ```swift
  /// assert(server.statistics.requestsUnanswered == 0, "a request was dropped unanswered")
  /// ```
  public var requestsUnanswered = 0
  /// Requests of a requests sequence answered with a `serverStopped` failure: still waiting
  /// for their reply when its consumer ended, or read in the instant before the server
  /// closed.
  ///
  /// ```swift
  /// print("\(server.statistics.requestsAnsweredAtStop) clients told the server stopped")
  /// ```
  public var requestsAnsweredAtStop = 0
  /// Replies of a requests sequence whose client had gone (its connection closed) by the
  /// time the reply was sent, and requests still waiting for their reply when the server was
  /// invalidated (it closed their connections: no reply can reach them).
  ///
  /// ```swift
  /// print("\(server.statistics.repliesUndelivered) replies found their client gone")
  /// ```
  public var repliesUndelivered = 0

  /// All zero.
  ///
  /// ```swift
  /// let none = NamedPortStatistics()
  /// ```
  package init() {}
}
