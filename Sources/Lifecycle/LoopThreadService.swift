import RunLoopCore
import ServiceLifecycle

/// A loop thread as a swift-service-lifecycle `Service`: the thread starts when the service
/// is made (so other services can use its loop at once), and ``run()`` returns when the
/// thread has ended.
///
/// Graceful shutdown (or cancelling the task that runs the service) stops the loop after
/// the work already queued: perform requests queued before run, and the thread then ends
/// (see ``/RunLoopCore/RunLoopThread/stop()``); a request that comes after is abandoned and
/// counted in ``abandonedPerformRequests``, never dropped silently. Actors pinned to the
/// loop must be done with it by then (a job queued on a loop whose thread has exited stops
/// the process).
///
/// ```swift
/// let worker = try LoopThreadService(name: "worker")
/// let group = ServiceGroup(
///   services: [worker], gracefulShutdownSignals: [.sigterm], logger: logger)
/// worker.loop.perform { print("on the worker") }
/// try await group.run()
/// ```
public final class LoopThreadService: Service, Sendable {
  /// The service's thread.
  ///
  /// ```swift
  /// print(worker.thread.name)
  /// ```
  public let thread: RunLoopThread

  /// Starts a thread named `name` that runs its loop until stopped.
  ///
  /// ```swift
  /// let worker = try LoopThreadService(name: "worker")
  /// ```
  ///
  /// - Throws: what ``/RunLoopCore/RunLoopThread/start()`` throws.
  public init(name: String) throws(RunLoopError) {
    thread = RunLoopThread(name: name) { thread in try thread.runLoop.runUntilStopped() }
    try thread.start()
  }

  /// The thread's loop.
  ///
  /// ```swift
  /// worker.loop.perform { serve() }
  /// ```
  public var loop: EventRunLoop { thread.runLoop }

  /// The perform requests the loop abandoned because its thread had exited.
  ///
  /// ```swift
  /// print("\(worker.abandonedPerformRequests) requests came too late")
  /// ```
  public var abandonedPerformRequests: Int { loop.abandonedPerformRequests }

  /// Waits until the thread has ended; a graceful shutdown or the task's cancellation
  /// stops it first.
  ///
  /// ```swift
  /// try await worker.run()
  /// ```
  ///
  /// - Throws: what `RunLoopThread.join()` throws.
  public func run() async throws {
    let thread = self.thread
    try await runUntilEnded(stop: { thread.stop() }, wait: { try await thread.join() })
  }
}
