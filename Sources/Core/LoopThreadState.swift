/// What only the loop's own thread touches (`EventRunLoop.local`).
struct LoopThreadState {
  /// The pass counter of ``LoopPassInfo/iteration``.
  var iteration: UInt64 = 0
  /// Counts runs started on this loop, so a pass can tell that a call-out ran a nested run.
  var runsStarted: UInt64 = 0
  /// Counts the wake-ups the loop took or dropped (see `Waker`), so a run nested inside a
  /// pass can tell that it may have taken one meant for the outer run.
  var wakeUpsTaken: UInt64 = 0
  /// The token of the descriptor watch a run that handles one source chose last, so that
  /// watches of equal order take turns.
  var lastChosenWatchToken: UInt64 = 0
  /// The step of the guide's sequence of events the innermost run is at, 1 to 10 (0: no
  /// run). Each step sets it as it begins; blocks and jobs run at steps 3, 4 and 9.
  var step: UInt8 = 0
  /// How many runs are active (``ActiveRuns`` publishes what other threads need).
  var depth = 0
  /// The active runs, outermost first, in `runs[0..<depth]`. Entries past the depth are
  /// kept: a run at a depth whose entry has its mode reuses it, which spares it an array
  /// append and removal and its mode's publication in `LoopState.runModes` (each entry's
  /// mode was published when it was set).
  var runs: [RunFrame] = []

  /// The innermost active run's mode, or `nil`.
  var innermostMode: LoopMode? { depth > 0 ? runs[depth - 1].mode : nil }
  var instruments = InstrumentCache()
  /// Reached only through `EventRunLoop[passIn:]`, which keeps it current.
  var passSnapshot = PassSnapshotSlot()
  /// How long the next sleep may poll before it blocks.
  var polling = PollingWindow()
  /// Whether the loop ignores wake-ups, CFRunLoop's "ignore wake-ups" flag: no run is
  /// active, or the innermost run has its events (step 5 or 7) and its next pass has not
  /// begun. A wake-up noted meanwhile is dropped when a run or pass begins (see
  /// `EventRunLoop.startCountingWakeUps(_:)`). The loop's alone: wakers only note.
  var ignoringWakeUps = true
  /// Whether the note outstanding when the loop began to ignore wake-ups was made while they
  /// counted: the next pass or run keeps it (see `EventRunLoop.startIgnoringWakeUps()`).
  var keepsNote = false
  /// How many main-queue drains are in progress (a nested run inside one does not serve
  /// the main queue).
  var mainQueueDrains = 0
  /// Per executor's job queue: its spare array and whether a nested run held its jobs.
  var jobSlots: [JobSlot] = []
  /// Emptied lists for step 4's signalled sources, one taken per step 4 in progress.
  var signalledSourceLists: [[SignalledSource]] = []
  /// The state of the loop's sources (``PublishedState/structure``) and the mode in which
  /// step 4 last found nothing it could run among the sources left in the loop's
  /// ``SignalInbox``: until either moves, only a new signal gives it something to do.
  var signalsCheckedFor: (structure: UInt64, mode: LoopMode)?
}

/// One active run of the loop.
struct RunFrame {
  var mode: LoopMode
  /// A stop request that landed while this run was the innermost and that it had not taken
  /// when a nested run began: handed back to ``ActiveRuns`` when the nested run ends.
  var stopRequested = false
}

/// A source step 4 found signalled: its order, the stamp of its first signal, the source.
typealias SignalledSource = (order: Int, stamp: UInt64, source: CustomInputSource)
