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
  /// Messages (one-way and requests) handed to the handler.
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

  /// All zero.
  ///
  /// ```swift
  /// let none = NamedPortStatistics()
  /// ```
  public init() {}
}
