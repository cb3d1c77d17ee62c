/// The state of a loop that every thread may touch, guarded by `EventRunLoop.state`.
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
    didSet { published.performCount.store(performQueue.count, ordering: .sequentiallyConsistent) }
  }
  var performBound = PerformQueueBound()
  var frames: [RunFrame] = [] {
    didSet {
      let pending = frames.contains { $0.stopRequested }
      published.stopPending.store(pending, ordering: .sequentiallyConsistent)
    }
  }
  var deadlineSources: [any DeadlineSource] = [] { didSet { structureDidChange() } }
  var instruments: [any RunLoopInstrument] = []
  var threadExited = false
  var mainQueueWatchInstalled = false
  /// The main-queue watch's token, once installed.
  var mainQueueWatchToken: UInt64?
  /// Swift concurrency jobs, one queue per executor of the loop (slot 0: the loop itself,
  /// then its `LoopExecutor`s, which the loop keeps for its thread's life).
  var jobQueues: [JobQueue] = []
  var executors: [LoopExecutor] = []
  /// The loop thread's pass snapshot while no run is active (see `PassSnapshotSlot`): kept
  /// here, under the lock, so that any change lets go of it at once, with the items in it.
  var parkedSnapshot: PassSnapshot?

  init(published: PublishedState) {
    self.published = published
  }

  private mutating func structureDidChange() {
    parkedSnapshot = nil
    published.structureDidChange()
  }
}

/// One active run of the loop.
struct RunFrame {
  let mode: LoopMode
  var stopRequested = false
}
