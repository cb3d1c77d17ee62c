/// The jobs Swift concurrency gave one executor of a loop (the loop itself, or a
/// ``LoopExecutor`` in chosen modes), waiting for the loop to run them.
///
/// Allocation-free once warm, in the manner of swift-nio's enqueue path: an `UnownedJob` is
/// one word, appended to an array that keeps its capacity. The loop takes a batch by swapping
/// `jobs` with `spare` (an emptied array with capacity), runs it off the lock, empties it and
/// hands it back as the next `spare`. So neither side allocates after the arrays have grown to
/// the largest batch seen.
struct JobQueue {
  /// Guarded by the loop's lock: jobs not yet taken.
  var jobs: [UnownedJob] = []
  /// Guarded by the loop's lock: the emptied array of the last batch, `nil` while a batch is
  /// being run (the loop thread holds it).
  var spare: [UnownedJob]? = []
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

  /// Whether a run in `mode` may run these jobs now: the mode is one of the executor's, and
  /// no job of this executor is on the loop thread's stack (a batch is out, `spare` is nil).
  func isRunnable(in mode: LoopMode, modeIsCommon: Bool) -> Bool {
    guard !jobs.isEmpty, spare != nil else { return false }
    return matches(mode, modeIsCommon: modeIsCommon)
  }

  func matches(_ mode: LoopMode, modeIsCommon: Bool) -> Bool {
    if commonModesOnly { return modeIsCommon }
    return modes.contains(mode) || (modeIsCommon && modes.contains(.common))
  }
}
