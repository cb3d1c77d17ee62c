import CRunLoopLinux

/// Every loop is an executor for Swift concurrency: an actor pinned to it runs each job on
/// the loop's thread, and a task may prefer it (`Task(executorPreference:)`,
/// `withTaskExecutorPreference`).
///
/// Jobs are call-outs of the loop, like perform requests: the loop runs them at the same
/// points of its pass (steps 3, after 4, and 9), in its common modes (or in a
/// ``LoopExecutor``'s modes), and holds them, never losing one, while it runs another mode.
/// At each of those points it first takes and runs the perform requests queued, then takes
/// and runs the jobs queued, each executor's in FIFO order (a job queued while a request of
/// that batch runs is in the jobs taken after it; a request queued meanwhile waits for the
/// next batch point). A job never runs while another job of the same executor is
/// on the stack: a nested run started inside a job holds that executor's jobs until the
/// outer job returns, so an actor method that runs the loop nested keeps its isolation.
extension EventRunLoop: SerialExecutor, TaskExecutor {
  /// Queues `job` to run on this loop's thread in its common modes; called by the Swift
  /// runtime. Safe from any thread, allocates nothing once warm, and wakes a sleeping loop.
  ///
  /// A job for a loop whose thread has exited stops the process with a message naming the
  /// loop. It can neither run there (the thread is gone) nor elsewhere (it is isolated to
  /// this thread: running it on another thread would break the isolation that
  /// `assumeIsolated` checks), and dropping it would leave its task suspended for ever
  /// with nobody told. An actor or task must not outlive its loop's thread.
  ///
  /// ```swift
  /// actor Counter {
  ///   let loop: EventRunLoop
  ///   init(loop: EventRunLoop) { self.loop = loop }
  ///   nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
  /// }
  /// ```
  public func enqueue(_ job: consuming ExecutorJob) {
    enqueue(UnownedJob(job), slot: 0)
  }

  /// Stops the process with a message unless called on this loop's thread: the check behind
  /// `assumeIsolated` and `preconditionIsolated` for actors pinned to the loop, for code the
  /// loop calls outside a job (a timer, a perform request, a source).
  ///
  /// ```swift
  /// let timer = try LoopTimer(fireAt: .now) { _ in counter.assumeIsolated { $0.tick() } }
  /// ```
  public func checkIsolated() {
    guard !isCurrent else { return }
    fatalError(
      "expected to run on the thread of \(self) (its actor's executor), "
        + "but running on thread \(crl_current_tid())")
  }

  /// `true` on this loop's thread; `nil` (undecided) elsewhere. The runtime asks this first:
  /// `true` settles an `assumeIsolated` at once; for `nil`, a check that must stop the
  /// process calls ``checkIsolated()``, whose message names the loop and the thread (a
  /// plain `false` would make the runtime stop with its own message, which names neither),
  /// and a check that only asks takes `nil` as "not isolated".
  ///
  /// ```swift
  /// loop.isIsolatingCurrentContext()  // true on the loop's thread, nil elsewhere
  /// ```
  public func isIsolatingCurrentContext() -> Bool? {
    isCurrent ? true : nil
  }

  /// An executor whose jobs run on this loop's thread only while the loop runs in one of
  /// `modes` (``LoopMode/common`` stands for the common modes). Asking again for the same
  /// set of modes returns the same executor. Safe from any thread.
  ///
  /// ```swift
  /// let tracking = loop.executor(modes: ["tracking"])
  /// try await withTaskExecutorPreference(tracking) { await dragSession() }
  /// ```
  ///
  /// - Precondition: `modes` is not empty.
  public func executor(modes: [LoopMode]) -> LoopExecutor {
    precondition(!modes.isEmpty, "an executor needs at least one mode to run its jobs in")
    let wanted = Set(modes)
    return state.withLock { state in
      if let existing = state.executors.first(where: { Set($0.modes) == wanted }) {
        return existing
      }
      addOwnJobQueueIfNeeded(&state)
      let executor = LoopExecutor(loop: self, modes: modes, slot: state.jobQueues.count)
      state.jobQueues.append(
        JobQueue(
          modes: modes, serialExecutor: executor.asUnownedSerialExecutor(),
          taskExecutor: executor.asUnownedTaskExecutor(),
          name: "executor(\(modes.map(\.name).joined(separator: ",")))"))
      state.executors.append(executor)
      return executor
    }
  }

  /// The loop's own queue (slot 0), made on first use: `self` is not there yet when the
  /// state is made.
  private func addOwnJobQueueIfNeeded(_ state: inout LoopState) {
    guard state.jobQueues.isEmpty else { return }
    state.jobQueues.append(
      JobQueue(
        modes: Self.commonModesOnly, serialExecutor: asUnownedSerialExecutor(),
        taskExecutor: asUnownedTaskExecutor(), name: "loop"))
  }

  func enqueue(_ job: UnownedJob, slot: Int) {
    let stamp = CauseStamp.ifTracing()
    let accepted = state.withLock { state -> Bool in
      guard !state.threadExited else { return false }
      addOwnJobQueueIfNeeded(&state)
      state.jobQueues[slot].append(job, stamp: stamp)
      published.jobCountDidChange(by: 1)
      return true
    }
    guard accepted else {
      fatalError(
        "a Swift concurrency job was enqueued on \(self), whose thread has exited: an actor "
          + "or task using this loop as its executor outlived the loop's thread")
    }
    // No fence before the wake-up, unlike `wakeUp()`: the job count was published with a
    // sequentially consistent store (see `Waker`).
    waker.wake()
  }

  /// Runs the jobs queued for `active` before this call; with none queued, one atomic load.
  func runJobs(_ active: ActiveMode) {
    guard published.jobCount.load(ordering: .sequentiallyConsistent) > 0 else { return }
    runQueuedJobs(active)
  }

  private func runQueuedJobs(_ active: ActiveMode) {
    var slot = 0
    while var batch = takeJobBatch(from: &slot, active: active) {
      // Through a buffer pointer: iterating the array itself holds a second reference to its
      // storage (so the `removeAll` after copied it) and, unoptimized, reads each element
      // through a heap-allocated accessor frame; either way the path allocated per job.
      batch.jobs.withUnsafeBufferPointer { jobs in
        for index in jobs.indices {
          if calloutInstrumentCount.load(ordering: .relaxed) > 0 {
            runTraced(jobs[index], stamp: batch.stamp(at: index), of: batch, slot: slot)
          } else {
            jobs[index].runSynchronously(
              isolatedTo: batch.serialExecutor, taskExecutor: batch.taskExecutor)
          }
        }
      }
      batch.jobs.removeAll(keepingCapacity: true)
      local.jobSlots[slot].spare = batch.jobs
      if local.jobSlots[slot].heldJobs {
        local.jobSlots[slot].heldJobs = false
        wakeUp()
      }
      guard batch.anotherIsRunnable else { return }
      slot += 1
    }
  }

  /// Under the lock, once per batch: takes the jobs of the first executor from `slot` on
  /// whose jobs may run in `active` now (moving `slot` to it), and looks whether a later one
  /// has some too, so that the usual pass, with one executor's jobs, takes the lock once.
  /// Jobs queued after this call wait for the next pass, whose wake-up their producer made.
  private func takeJobBatch(from slot: inout Int, active: ActiveMode) -> JobBatch? {
    state.withLock { state -> JobBatch? in
      var taken: (slot: Int, jobs: [UnownedJob])?
      for index in slot..<state.jobQueues.count {
        // Read in place: a copy of the queue retains each of its arrays and its name.
        guard !state.jobQueues[index].jobs.isEmpty,
          state.jobQueues[index].matches(active)
        else { continue }
        while local.jobSlots.count <= index {
          local.jobSlots.append(JobSlot(name: state.jobQueues[local.jobSlots.count].name))
        }
        // A batch of this executor is on the stack (this is a nested run): its jobs wait.
        guard local.jobSlots[index].spare != nil else {
          local.jobSlots[index].heldJobs = true
          continue
        }
        if let first = taken.take() { return batch(first, anotherIsRunnable: true) }
        // Moved, never copied: a second reference to either array would make the next append
        // to the queue, or the emptying of the batch, copy it.
        var jobs = local.jobSlots[index].spare.take()!
        swap(&jobs, &state.jobQueues[index].jobs)
        taken = (index, jobs)
      }
      return taken.take().map { batch($0, anotherIsRunnable: false) }

      func batch(_ taken: (slot: Int, jobs: [UnownedJob]), anotherIsRunnable: Bool) -> JobBatch {
        slot = taken.slot
        published.jobCountDidChange(by: -taken.jobs.count)
        return JobBatch(
          jobs: taken.jobs, stamps: state.jobQueues[taken.slot].takeStamps(),
          serialExecutor: state.jobQueues[taken.slot].serialExecutor,
          taskExecutor: state.jobQueues[taken.slot].taskExecutor,
          anotherIsRunnable: anotherIsRunnable)
      }
    }
  }

  private func runTraced(_ job: UnownedJob, stamp: CauseStamp?, of batch: JobBatch, slot: Int) {
    // The job's description names its task ("UnownedJob(id: 12)"); a task's own name
    // (`Task.name`) is visible only to code running in that task, not to its executor.
    callOut(
      .job, name: "\(local.jobSlots[slot].name) \(job.description)", dueAt: stamp?.queuedAt,
      cause: stamp?.cause
    ) {
      job.runSynchronously(isolatedTo: batch.serialExecutor, taskExecutor: batch.taskExecutor)
    }
  }

  /// Whether some job waits for `mode` (held or not): such a run is not empty.
  func hasJobs(for active: ActiveMode) -> Bool {
    guard published.jobCount.load(ordering: .sequentiallyConsistent) > 0 else { return false }
    return state.withLock { state in
      state.jobQueues.contains { !$0.jobs.isEmpty && $0.matches(active) }
    }
  }
}

/// One executor's jobs taken out of its queue to run.
struct JobBatch {
  var jobs: [UnownedJob]
  // When and by whom each job was queued, for the jobs queued while tracing (see `JobQueue`).
  let stamps: [CauseStamp?]
  let serialExecutor: UnownedSerialExecutor
  let taskExecutor: UnownedTaskExecutor
  /// Whether, when it was taken, a later executor had jobs to run in the same mode too.
  let anotherIsRunnable: Bool
}

extension JobBatch {
  /// The stamp of the job at `index`, if it was queued while tracing.
  func stamp(at index: Int) -> CauseStamp? {
    index < stamps.count ? stamps[index] : nil
  }
}
