/// What kind of user code a run loop called: the label a trace puts on a call-out.
///
/// Modules add their own kinds with ``init(_:)``.
///
/// ```swift
/// try loop.withCallout(.timer, name: "heartbeat") { beat() }
/// ```
public struct CalloutKind: Hashable, Sendable, CustomStringConvertible {
  /// The kind's name in traces (`timer`, `source`, `block`, `port`, `mainQueue`).
  public let name: String

  /// Creates a kind.
  public init(_ name: String) {
    self.name = name
  }

  /// The name.
  public var description: String { name }

  /// A timer's handler.
  public static let timer = CalloutKind("timer")
  /// A custom (version 0) input source's perform call-out.
  public static let source = CalloutKind("source")
  /// A perform request's closure.
  public static let block = CalloutKind("block")
  /// A port-based (version 1) source's handler: a descriptor, a port message.
  public static let port = CalloutKind("port")
  /// Draining `DispatchQueue.main` on the main run loop.
  public static let mainQueue = CalloutKind("mainQueue")
}
