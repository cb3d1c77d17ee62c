// Ports are compared by identity, so they can be kept in sets and dictionaries.
extension InProcessPort: Hashable {
  /// Ports are equal only to themselves.
  ///
  /// ```swift
  /// assert(message.receivePort == port)
  /// ```
  public static func == (lhs: InProcessPort, rhs: InProcessPort) -> Bool { lhs === rhs }

  /// Hashes the port's identity.
  ///
  /// ```swift
  /// var known: Set<InProcessPort> = [mainPort, workerPort]
  /// ```
  public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
