import Synchronization

/// A fixed set of loop threads that share work, the role of SwiftNIO's
/// `MultiThreadedEventLoopGroup`: ``next()`` hands out the loops round robin, ``any()``
/// prefers the caller's own loop, and ``shutdownGracefully()`` ends them all after the work
/// already queued.
///
/// Each thread runs its loop with ``EventRunLoop/runUntilStopped(mode:)`` in
/// ``LoopMode/default``, so a loop of the group serves perform requests, Swift concurrency
/// jobs, and the sources, timers and ports added to it, from its start to the shutdown.
///
/// The group is an executor pool for actors: pin each actor to a loop of ``next()`` (a loop
/// is a `SerialExecutor`), and the actors spread over the threads. As a `TaskExecutor`, the
/// group hands each job of a task that prefers it to the next loop.
///
/// ```swift
/// actor Session {
///   let loop: EventRunLoop
///   init(group: RunLoopGroup) { loop = group.next() }
///   nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
/// }
/// let group = try RunLoopGroup(threadCount: 4)
/// let session = Session(group: group)
/// try await group.shutdownGracefully()
/// ```
///
/// Compared with `MultiThreadedEventLoopGroup`: `next()`, `any()` and
/// `shutdownGracefully()` mean the same; NIO's loops run `EventLoopFuture` callbacks and
/// channels, these run the guide's sources, modes and timers, and perform requests. NIO's
/// shutdown fails the tasks still scheduled; here a shutdown runs the requests queued before
/// it, and a request that comes after is abandoned and counted in
/// ``abandonedPerformRequests``. An actor or task must not use a loop of the group after
/// the shutdown: a Swift concurrency job queued on a loop whose thread has exited stops the
/// process (see ``EventRunLoop/enqueue(_:)``).
public final class RunLoopGroup: TaskExecutor, Sendable {
  /// The group's threads, in the order ``next()`` visits their loops.
  ///
  /// ```swift
  /// for thread in group.threads { print(thread.name) }
  /// ```
  public let threads: [RunLoopThread]
  /// The group's loops, one per thread, in the order ``next()`` hands them out.
  ///
  /// ```swift
  /// let first = group.loops[0]
  /// ```
  public let loops: [EventRunLoop]
  private let cursor = Atomic<Int>(0)

  /// Starts `threadCount` loop threads, named `name-0`, `name-1`, ...; returns once every
  /// loop exists.
  ///
  /// ```swift
  /// let group = try RunLoopGroup(threadCount: 4, name: "io")
  /// ```
  ///
  /// - Throws: ``RunLoopError/Code/invalidArgument`` for a count below 1; what
  ///   ``RunLoopThread/start()`` throws (the threads already started are stopped and
  ///   joined first).
  public init(threadCount: Int, name: String = "loop-group") throws(RunLoopError) {
    guard threadCount >= 1 else {
      throw .invalidArgument("a loop group needs at least one thread, not \(threadCount)")
    }
    var threads: [RunLoopThread] = []
    for index in 0..<threadCount {
      let thread = RunLoopThread(name: "\(name)-\(index)") { thread in
        try thread.runLoop.runUntilStopped()
      }
      do {
        try thread.start()
      } catch {
        for started in threads {
          started.stop()
          try? started.join()
        }
        throw error
      }
      threads.append(thread)
    }
    self.threads = threads
    self.loops = threads.map(\.runLoop)
  }

  /// The next loop, round robin: the first call returns `loops[0]`, then `loops[1]`, and
  /// so on, wrapping around. Safe from any thread.
  ///
  /// ```swift
  /// group.next().perform { serve() }
  /// ```
  public func next() -> EventRunLoop {
    let turn = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
    return loops[(turn & Int.max) % loops.count]
  }

  /// The caller's own loop when it runs on one of the group's threads (no hop), otherwise
  /// ``next()``.
  ///
  /// ```swift
  /// let loop = group.any()
  /// ```
  public func any() -> EventRunLoop {
    loops.first(where: \.isCurrent) ?? next()
  }

  /// Queues `job` on ``next()``: a task that prefers the group runs each of its jobs on
  /// one of its loops. Called by the Swift runtime.
  ///
  /// ```swift
  /// try await withTaskExecutorPreference(group) { await work() }
  /// ```
  public func enqueue(_ job: consuming ExecutorJob) {
    next().enqueue(job)
  }

  /// Begins the shutdown without waiting: every thread stops after the work queued before
  /// (see ``RunLoopThread/stop()``). Safe from any thread; a second call does nothing more.
  ///
  /// ```swift
  /// group.stop()
  /// try await group.join()
  /// ```
  public func stop() {
    for thread in threads { thread.stop() }
  }

  /// Waits, suspended, until every thread of the group has ended.
  ///
  /// ```swift
  /// group.stop()
  /// try await group.join()
  /// ```
  ///
  /// - Throws: ``RunLoopError/Code/invalidState`` when the group was joined already;
  ///   ``RunLoopError/Code/threadFailed`` when a thread's loop failed (the others are
  ///   still waited for).
  public func join() async throws(RunLoopError) {
    var firstFailure: RunLoopError?
    for thread in threads {
      do {
        try await thread.join()
      } catch {
        firstFailure = firstFailure ?? error
      }
    }
    if let firstFailure { throw firstFailure }
  }

  /// Stops every loop after the work queued before, and waits until every thread has
  /// ended (``stop()`` and ``join()``).
  ///
  /// ```swift
  /// try await group.shutdownGracefully()
  /// print("\(group.abandonedPerformRequests) requests came too late")
  /// ```
  ///
  /// - Throws: what ``join()`` throws.
  public func shutdownGracefully() async throws(RunLoopError) {
    stop()
    try await join()
  }

  /// The perform requests the group's loops abandoned because their threads had exited.
  ///
  /// ```swift
  /// #expect(group.abandonedPerformRequests == 0)
  /// ```
  public var abandonedPerformRequests: Int {
    loops.reduce(0) { $0 + $1.abandonedPerformRequests }
  }
}
