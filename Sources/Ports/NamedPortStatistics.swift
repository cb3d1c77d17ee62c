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

  /// All zero.
  ///
  /// ```swift
  /// let none = NamedPortStatistics()
  /// ```
  public init() {}
}
