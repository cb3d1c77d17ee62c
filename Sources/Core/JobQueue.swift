/// The jobs Swift concurrency gave one executor of a loop (the loop itself, or a
/// ``LoopExecutor`` in chosen modes), waiting for the loop to run them.
///
/// Allocation-free once warm, in the manner of swift-nio's enqueue path: an `UnownedJob` is
/// one word, appended to an array that keeps its capacity. The loop takes a batch by swapping
/// `jobs` with the executor's spare array (an emptied array with capacity, kept on the loop's
/// thread in ``JobSlot``), runs it off the lock, empties it and keeps it as the next spare.
/// So neither side allocates after the arrays have grown to the largest batch seen.
struct JobQueue {
  /// Guarded by the loop's lock: jobs not yet taken.
  var jobs: [UnownedJob] = []
  /// Guarded by the loop's lock: when and by whom the jobs were queued, index for index,
  /// for jobs queued while some instrument wants call-outs; shorter than `jobs` (usually
  /// empty, allocating nothing) when some were queued untraced.
  var stamps: [CauseStamp?] = []
  /// The modes whose runs may run these jobs (``LoopMode/common``: the common modes).
  let modes: [LoopMode]
  let commonModesOnly: Bool
  /// Whom the jobs run as: the loop or the ``LoopExecutor``, unowned (the loop holds its
  /// executors for its thread's life).
  let serialExecutor: UnownedSerialExecutor
  let taskExecutor: UnownedTaskExecutor
  /// The executor's name in traces.
  let name: String

  init(
    modes: [LoopMode], serialExecutor: UnownedSerialExecutor,
    taskExecutor: UnownedTaskExecutor, name: String
  ) {
    self.modes = modes
    self.commonModesOnly = modes.count == 1 && modes[0] == .common
    self.serialExecutor = serialExecutor
    self.taskExecutor = taskExecutor
    self.name = name
  }

  /// Queues `job`, with its stamp if it was queued while tracing.
  mutating func append(_ job: UnownedJob, stamp: CauseStamp?) {
    if let stamp {
      if stamps.count < jobs.count {
        stamps.append(contentsOf: repeatElement(nil, count: jobs.count - stamps.count))
      }
      stamps.append(stamp)
    }
    jobs.append(job)
  }

  /// The stamps of the jobs being taken as a batch (nothing to move when none was traced).
  mutating func takeStamps() -> [CauseStamp?] {
    guard !stamps.isEmpty else { return [] }
    defer { stamps = [] }
    return stamps
  }

  func matches(_ active: ActiveMode) -> Bool {
    if commonModesOnly { return active.isCommon }
    return modes.contains(active.mode) || (active.isCommon && modes.contains(.common))
  }
}

/// What the loop's thread keeps for one executor's queue (same index as
/// `LoopState.jobQueues`): only that thread takes and runs batches, so none of this needs
/// the loop's lock.
struct JobSlot {
  /// The executor's name in traces (its queue's), kept here so that a batch need not carry
  /// a copy of it (a retain and a release per batch, for a name only tracing reads).
  let name: String
  /// The emptied array of the last batch, `nil` while a batch of this executor is being run
  /// (its jobs are on the loop thread's stack, and a nested run must not start another).
  var spare: [UnownedJob]? = []
  /// A run nested in that batch found jobs of this executor and had to leave them: when the
  /// batch ends, the loop wakes itself for them, since the nested run may have taken the
  /// wake-up their producer made.
  var heldJobs = false
}
