/// The state of a loop that every thread may touch, guarded by `EventRunLoop.state`.
///
/// A loop's state has two domains. What only its thread touches is `EventRunLoop.local`
/// (`LoopThreadState`: no lock, no atomics). What other threads share is here, under this
/// one lock, with a few facts published as atomics for lock-free reads on the pass's path
/// (`PublishedState`, the `Waker`, `ActiveRuns`). The locks a loop's code takes, in the
/// only order they nest (a lock is taken only while holding locks above it in the table):
///
/// | Order | Lock | Guards | Held while taking |
/// |---|---|---|---|
/// | 1 | `EventRunLoop.state` | modes, sources, watches, queues, deadline sources | a source's or a watch's lock, the signal inbox's |
/// | 2 | `CustomInputSource`'s own | the loops and modes it is scheduled in | the signal inbox's |
/// | 2 | `DescriptorWatch`'s list of loops | the loops it is registered with | nothing |
/// | 3 | `SignalInbox`'s entries | the loop's signalled sources | nothing |
///
/// No user call-out runs under any of them, and the loop calls deadline sources with no
/// lock held.
///
/// Each change to what a pass reads (modes, sources, watches, deadline sources, held
/// descriptors) goes through ``structureDidChange()``, which moves `published.structure`
/// on, so the loop thread can keep its ``PassSnapshot`` for as long as the number has not
/// moved, without taking this lock. (Observers without `oldValue` mutate in place: no copy
/// of the tables.)
struct LoopState {
  let published: PublishedState
  var commonModes: Set<LoopMode> = [.default] { didSet { structureDidChange() } }
  var sources = LoopModeTable<CustomInputSource>() { didSet { structureDidChange() } }
  var watches = LoopModeTable<DescriptorWatch>() { didSet { structureDidChange() } }
  var watchesByToken: [UInt64: DescriptorWatch] = [:]
  var watchedDescriptors: Set<Int32> = []
  /// Watches that became ready while the loop ran a mode they are not in; they are out of
  /// the `epoll` set until a run in one of their modes puts them back.
  var heldTokens: Set<UInt64> = [] { didSet { structureDidChange() } }
  var performQueue = RequestList() {
    didSet { published.performCountDidChange(to: performQueue.count) }
  }
  var performBound = PerformQueueBound()
  /// The modes of the active runs, outermost first, for other threads (``EventRunLoop/currentMode``);
  /// `runs` tells how many are active. Written by the loop thread before it
  /// publishes a run at a depth whose entry differs, so entries past the depth are stale.
  var runModes: [LoopMode] = []
  var deadlineSources: [any DeadlineSource] = [] { didSet { structureDidChange() } }
  var instruments: [any RunLoopInstrument] = []
  var threadExited = false
  /// What ends with the thread (see `EventRunLoop.whenThreadExits(_:)`).
  var exitHandlers = ThreadExitHandlers()
  var mainQueueWatchInstalled = false
  /// The main-queue watch's token, once installed.
  var mainQueueWatchToken: UInt64?
  /// Swift concurrency jobs, one queue per executor of the loop (slot 0: the loop itself,
  /// then its `LoopExecutor`s, which the loop keeps for its thread's life).
  var jobQueues: [JobQueue] = []
  var executors: [LoopExecutor] = []

  init(published: PublishedState) {
    self.published = published
  }

  private mutating func structureDidChange() {
    published.structureDidChange()
  }
}
