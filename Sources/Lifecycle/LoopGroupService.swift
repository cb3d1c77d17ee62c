import RunLoopCore
import ServiceLifecycle

/// A ``/RunLoopCore/RunLoopGroup`` as a swift-service-lifecycle `Service`: the group's
/// threads run from the service's creation, and ``run()`` returns when they have all ended.
///
/// Graceful shutdown (or cancelling the task that runs the service) stops every loop after
/// the work already queued (``/RunLoopCore/RunLoopGroup/stop()``); requests that come after
/// are abandoned and counted in ``/RunLoopCore/RunLoopGroup/abandonedPerformRequests``.
/// `ServiceGroup` shuts its services down in reverse order, so list this service before the
/// services that use its loops: they finish first, then the loops stop.
///
/// ```swift
/// let loops = try LoopGroupService(threadCount: 4)
/// let server = EchoServer(group: loops.group)
/// let services = ServiceGroup(
///   services: [loops, server], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await services.run()
/// ```
public final class LoopGroupService: Service, Sendable {
  /// The group of loops.
  ///
  /// ```swift
  /// let loop = loops.group.next()
  /// ```
  public let group: RunLoopGroup

  /// Starts a group of `threadCount` loop threads.
  ///
  /// ```swift
  /// let loops = try LoopGroupService(threadCount: 4, name: "io")
  /// ```
  ///
  /// - Throws: what ``/RunLoopCore/RunLoopGroup/init(threadCount:name:)`` throws.
  public init(threadCount: Int, name: String = "loop-group") throws(RunLoopError) {
    group = try RunLoopGroup(threadCount: threadCount, name: name)
  }

  /// Serves an existing group.
  ///
  /// ```swift
  /// let loops = LoopGroupService(group: try RunLoopGroup(threadCount: 2))
  /// ```
  public init(group: RunLoopGroup) {
    self.group = group
  }

  /// Waits until every thread of the group has ended; a graceful shutdown or the task's
  /// cancellation stops them first.
  ///
  /// ```swift
  /// try await loops.run()
  /// ```
  ///
  /// - Throws: what ``/RunLoopCore/RunLoopGroup/join()`` throws.
  public func run() async throws {
    let group = self.group
    try await runUntilEnded(stop: { group.stop() }, wait: { try await group.join() })
  }
}
