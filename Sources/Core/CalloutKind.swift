/// What kind of user code a run loop called: the label a trace puts on a call-out.
///
/// The kinds are fixed by the package's modules (the Observers module adds `observer`); a
/// tracer reads them from each ``CalloutRecord``.
///
/// ```swift
/// if record.kind == .timer { timerTime += record.end - record.start }
/// ```
public struct CalloutKind: Hashable, Sendable, CustomStringConvertible {
  /// The kind's name in traces (`timer`, `source`, `block`, `port`, `mainQueue`, `job`).
  ///
  /// ```swift
  /// CalloutKind.timer.name  // "timer"
  /// ```
  public let name: String

  /// Creates a kind; the package's modules make theirs with it.
  package init(_ name: String) {
    self.name = name
  }

  /// The name.
  ///
  /// ```swift
  /// "\(CalloutKind.port)"  // "port"
  /// ```
  public var description: String { name }

  /// A timer's handler.
  ///
  /// ```swift
  /// loop.withCallout(.timer, name: "heartbeat", dueAt: fireDate) { beat() }
  /// ```
  public static let timer = CalloutKind("timer")
  /// A custom (version 0) input source's perform call-out.
  ///
  /// ```swift
  /// if record.kind == .source { sourceCallouts += 1 }
  /// ```
  public static let source = CalloutKind("source")
  /// A perform request's closure.
  ///
  /// ```swift
  /// loop.withCallout(.block, name: "job") { job() }
  /// ```
  public static let block = CalloutKind("block")
  /// A port-based (version 1) source's handler: a descriptor, a port message.
  ///
  /// ```swift
  /// loop.withCallout(.port, name: "socket") { handleReadable() }
  /// ```
  public static let port = CalloutKind("port")
  /// Draining `DispatchQueue.main` on the main run loop.
  ///
  /// ```swift
  /// let drains = records.filter { $0.kind == .mainQueue }
  /// ```
  public static let mainQueue = CalloutKind("mainQueue")
  /// A Swift concurrency job run by the loop as an executor (an actor's method, a task
  /// preferring the loop).
  ///
  /// ```swift
  /// let jobs = records.filter { $0.kind == .job }
  /// ```
  public static let job = CalloutKind("job")
}
