/// An executor that runs Swift concurrency jobs on a run loop's thread in chosen modes: what
/// ``EventRunLoop/executor(modes:)`` returns.
///
/// The loop itself is an executor whose jobs run in its common modes. A `LoopExecutor`
/// runs them only while the loop runs in one of `modes`: an actor pinned to one in a
/// private mode is served only by a run in that mode, and its jobs wait (never lost) while
/// the loop runs elsewhere. Each `LoopExecutor` is its own serial executor: its jobs never
/// run while another of its jobs is on the stack, but a nested run inside one of them may run
/// the jobs of the loop's other executors.
///
/// ```swift
/// actor Tracker {
///   let executor: LoopExecutor
///   init(loop: EventRunLoop) { executor = loop.executor(modes: ["tracking"]) }
///   nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
/// }
/// ```
///
/// The loop keeps its executors for its thread's life; asking again for the same modes
/// returns the same executor.
public final class LoopExecutor: SerialExecutor, TaskExecutor, Sendable {
  /// The loop whose thread runs the jobs.
  ///
  /// ```swift
  /// let executor = worker.runLoop.executor(modes: [.default])
  /// executor.loop === worker.runLoop  // true
  /// ```
  public let loop: EventRunLoop
  /// The modes whose runs may run the jobs (``LoopMode/common`` for the loop's common modes).
  ///
  /// ```swift
  /// loop.executor(modes: ["tracking"]).modes  // ["tracking"]
  /// ```
  public let modes: [LoopMode]
  // The executor's queue in the loop's state; fixed at creation.
  let slot: Int

  init(loop: EventRunLoop, modes: [LoopMode], slot: Int) {
    self.loop = loop
    self.modes = modes
    self.slot = slot
  }

  /// Queues `job` to run on the loop's thread in one of ``modes``; called by the Swift
  /// runtime. Safe from any thread; wakes a sleeping loop. Stops the process with a message
  /// when the loop's thread has exited (see ``EventRunLoop/enqueue(_:)``).
  ///
  /// ```swift
  /// executor.enqueue(job)  // the runtime does this when a task hops onto the executor
  /// ```
  public func enqueue(_ job: consuming ExecutorJob) {
    loop.enqueue(UnownedJob(job), slot: slot)
  }

  /// Stops the process with a message unless called on the loop's thread, so that
  /// `assumeIsolated` and `preconditionIsolated` work from code the loop calls (a timer, a
  /// perform request) and fail clearly elsewhere.
  ///
  /// ```swift
  /// executor.checkIsolated()  // on the loop's thread: returns
  /// ```
  public func checkIsolated() {
    loop.checkIsolated()
  }

  /// `true` on the loop's thread, `nil` elsewhere, so that a failed check reaches
  /// ``checkIsolated()`` and its message (see ``EventRunLoop/isIsolatingCurrentContext()``).
  ///
  /// ```swift
  /// executor.isIsolatingCurrentContext()  // true on the loop's thread, nil elsewhere
  /// ```
  public func isIsolatingCurrentContext() -> Bool? {
    loop.isIsolatingCurrentContext()
  }
}
