import CRunLoopLinux
import Glibc
import Synchronization

/// A run loop: the event-processing loop a thread uses to wait for work and do it, as the
/// guide's "Run Loops" chapter describes (the role of CoreFoundation's `CFRunLoop` and
/// Foundation's `RunLoop`, whose name we leave to Foundation).
///
/// Every thread has exactly one, created the first time the thread asks for
/// ``current``. A loop watches custom input sources, descriptors (version-1 sources), timers
/// (through the Timers module) and perform requests, organised in modes; it sleeps in
/// `epoll` when there is nothing to do and burns no CPU while it sleeps.
///
/// ```swift
/// let loop = EventRunLoop.current
/// let source = CustomInputSource(name: "work") { print("signalled") }
/// try loop.add(source, mode: .default)
/// source.signal()
/// let result = try loop.run(mode: .default, timeout: .milliseconds(100))
/// ```
///
/// Only the owning thread may run the loop. Everything else (adding and removing sources,
/// ``stop()``, ``wakeUp()``, ``perform(inModes:name:_:)``) is safe from any thread, as the
/// guide's "Thread Safety and Run Loop Objects" describes for CoreFoundation.
public final class EventRunLoop: @unchecked Sendable {
  /// A number that identifies the loop in traces, unique in the process.
  ///
  /// ```swift
  /// print("loop \(EventRunLoop.current.id)")
  /// ```
  public let id: UInt64
  /// The kernel thread id (`gettid`) of the thread that owns the loop.
  ///
  /// ```swift
  /// print("the worker's loop runs on thread \(worker.runLoop.threadID)")
  /// ```
  public let threadID: pid_t
  /// Whether this is the main thread's loop.
  ///
  /// ```swift
  /// if EventRunLoop.current.isMain { print("on the main thread") }
  /// ```
  public let isMain: Bool

  let poller: Poller
  // Everything shared between threads, behind one lock. No user call-out ever runs while
  // it is held.
  let state: GuardedState<LoopState>
  // What the state's lock publishes for the loop thread to read without taking it.
  let published: PublishedState
  // Where the wake-up protocol is (`WakeState`): whether a wakeUp() wrote to the eventfd
  // and the loop has not seen the event yet, or the loop is polling and wakeUp() marks it.
  let wakeState = Atomic<UInt8>(WakeState.awake)
  // Changes whenever the loop's own instruments change.
  let instrumentsVersion = Atomic<UInt64>(0)
  // The longest a sleep may poll before blocking, in nanoseconds (see `spinLimit`).
  let spinLimitStorage = Atomic<Int64>(defaultSpinLimitNanoseconds.load(ordering: .relaxed))
  let spinCounters = SpinCounters()
  // Loop thread only.
  //
  // Not checked for exclusive access at run time: only the loop's thread touches it, and a
  // pass reads and writes it dozens of times (each check is a runtime call and a
  // thread-local look-up).
  @exclusivity(unchecked) var local = LoopThreadState()

  init(threadID: pid_t, isMain: Bool) throws(RunLoopError) {
    self.id = loopIdentityCounter.wrappingAdd(1, ordering: .relaxed).newValue
    self.threadID = threadID
    self.isMain = isMain
    let published = PublishedState()
    self.published = published
    self.state = GuardedState(LoopState(published: published))
    self.poller = try Poller()
    _ = spinSlotsResetInForkedChild
  }

  /// The calling thread's run loop, created on first use.
  ///
  /// ```swift
  /// let loop = EventRunLoop.current
  /// assert(loop === EventRunLoop.current)  // stable for the thread's whole life
  /// ```
  ///
  /// The loop lives as long as its thread (and as long as anyone holds it); creating it needs
  /// three descriptors, and the process stops with a message if it has none left.
  public static var current: EventRunLoop {
    let tid = crl_current_tid()
    if tid == getpid() { return main }
    if let stored = pthread_getspecific(currentLoopKey) {
      return Unmanaged<EventRunLoop>.fromOpaque(stored).takeUnretainedValue()
    }
    let loop = makeOrStop(threadID: tid, isMain: false)
    pthread_setspecific(currentLoopKey, Unmanaged.passRetained(loop).toOpaque())
    return loop
  }

  /// The main thread's run loop, reachable from any thread.
  ///
  /// ```swift
  /// EventRunLoop.main.perform { print("on the main thread") }
  /// ```
  public static var main: EventRunLoop { mainLoopInstance }

  static func makeOrStop(threadID: pid_t, isMain: Bool) -> EventRunLoop {
    do {
      return try EventRunLoop(threadID: threadID, isMain: isMain)
    } catch {
      fatalError("cannot create a run loop for thread \(threadID): \(error)")
    }
  }

  /// Whether the calling thread owns this loop. A loop whose thread has exited is current
  /// nowhere, even on a later thread that the kernel gave the same thread id.
  ///
  /// ```swift
  /// precondition(loop.isCurrent, "call this on the loop's thread")
  /// ```
  public var isCurrent: Bool {
    if isMain { return crl_current_tid() == threadID }
    return pthread_getspecific(currentLoopKey) == Unmanaged.passUnretained(self).toOpaque()
  }

  /// The mode of the innermost active run, or `nil` when the loop is not running.
  ///
  /// ```swift
  /// let source = CustomInputSource { print(EventRunLoop.current.currentMode!) }
  /// ```
  public var currentMode: LoopMode? { state.withLock { $0.frames.last?.mode } }

  /// Whether a run of the loop is active (on its thread).
  ///
  /// ```swift
  /// if loop.isRunning { loop.stop() }
  /// ```
  public var isRunning: Bool { state.withLock { !$0.frames.isEmpty } }

  /// Whether the owning thread has exited; such a loop can no longer run.
  ///
  /// ```swift
  /// guard !worker.runLoop.threadHasExited else { return }
  /// ```
  public var threadHasExited: Bool { state.withLock { $0.threadExited } }

  /// The loop's common modes: the modes an item added in ``LoopMode/common`` belongs to.
  /// ``LoopMode/default`` is one from the start.
  ///
  /// ```swift
  /// EventRunLoop.current.commonModes  // [.default] until addCommonMode(_:) adds more
  /// ```
  public var commonModes: Set<LoopMode> { state.withLock { $0.commonModes } }

  /// Whether `mode` is one of the loop's common modes.
  ///
  /// ```swift
  /// loop.addCommonMode("tracking")
  /// loop.isCommonMode("tracking")  // true
  /// ```
  public func isCommonMode(_ mode: LoopMode) -> Bool {
    state.withLock { $0.commonModes.contains(mode) }
  }

  /// Adds `mode` to the loop's common modes. Every item already added in
  /// ``LoopMode/common`` joins `mode` at once (sources get their `schedule` call-out for
  /// it), and so do items added in `.common` later. There is no way to remove a common mode,
  /// as in CoreFoundation. Adding `.common` itself, or a mode twice, does nothing.
  ///
  /// ```swift
  /// loop.addCommonMode("tracking")
  /// ```
  public func addCommonMode(_ mode: LoopMode) {
    guard mode != .common else { return }
    let joining: [CustomInputSource]? = state.withLock { state in
      guard state.commonModes.insert(mode).inserted else { return nil }
      state.sources.commonModesDidChange()
      state.watches.commonModesDidChange()
      return state.sources.items(in: .common).filter { !state.sources.contains($0, in: mode) }
    }
    guard let joining else { return }
    for source in joining { source.scheduleHandler?(self, mode) }
    wakeUp()
  }

  /// Makes a sleeping loop wake and go round its sequence of events again (step 9 restarts
  /// at step 2). Safe from any thread; many calls before the loop wakes cost one write.
  ///
  /// ```swift
  /// source.signal()
  /// loop.wakeUp()
  /// ```
  public func wakeUp() {
    // Orders the caller's earlier writes (a signal, a queued request) before the read of the
    // flag; pairs with the loop's sequentially consistent clear.
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    wakeUpAfterPublishing()
  }

  /// `wakeUp()` for a caller whose change was published with a sequentially consistent
  /// store (the perform count): in the single total order of such operations that store
  /// comes before this load of the flag, and the loop's clearing of the flag before its load
  /// of the count, so one of the two sees the other's write. The fence `wakeUp()` needs to
  /// order plain writes is left out.
  ///
  /// While the loop polls before sleeping, the state says so, and a wake-up marks it instead
  /// of writing to the eventfd: the poll sees the mark, and the waker saves a system call.
  func wakeUpAfterPublishing() {
    var current = wakeState.load(ordering: .sequentiallyConsistent)
    while true {
      let next: UInt8
      switch current {
      case WakeState.awake: next = WakeState.written
      case WakeState.polling: next = WakeState.marked
      default: return  // written or marked: the loop will see that wake-up, and this one
      }
      let (exchanged, original) = wakeState.compareExchange(
        expected: current, desired: next, ordering: .sequentiallyConsistent)
      if exchanged {
        if next == WakeState.written { poller.wake() }
        return
      }
      current = original
    }
  }

  /// Ends the innermost active run, which returns ``RunResult/stopped``. Safe from any
  /// thread. When the loop is not running, nothing happens: the request is not remembered
  /// for a later run (as in CoreFoundation).
  ///
  /// ```swift
  /// DispatchQueue.global().asyncAfter(deadline: .now() + 1) { loop.stop() }
  /// try loop.run()
  /// ```
  public func stop() {
    let stopped = state.withLock { state -> Bool in
      guard !state.frames.isEmpty else { return false }
      state.frames[state.frames.count - 1].stopRequested = true
      return true
    }
    if stopped { wakeUp() }
  }

  /// Attaches an instrument to this loop. Safe from any thread; it hears from the next
  /// activity on.
  ///
  /// ```swift
  /// loop.addInstrument(recorder)
  /// ```
  public func addInstrument(_ instrument: any RunLoopInstrument) {
    state.withLock { $0.instruments.append(instrument) }
    noteInstrumentAdded(instrument)
    instrumentsVersion.wrappingAdd(1, ordering: .releasing)
  }

  /// Detaches an instrument from this loop. Safe from any thread.
  ///
  /// ```swift
  /// loop.removeInstrument(recorder)
  /// ```
  public func removeInstrument(_ instrument: any RunLoopInstrument) {
    let removed = state.withLock { state -> Bool in
      guard let index = state.instruments.firstIndex(where: { $0 === instrument }) else {
        return false
      }
      state.instruments.remove(at: index)
      return true
    }
    if removed {
      noteInstrumentRemoved(instrument)
      instrumentsVersion.wrappingAdd(1, ordering: .releasing)
    }
  }

  /// Attaches an instrument to every loop of the process, present and future.
  ///
  /// ```swift
  /// EventRunLoop.addProcessInstrument(tracer)
  /// ```
  public static func addProcessInstrument(_ instrument: any RunLoopInstrument) {
    processInstruments.withLock { $0.append(instrument) }
    noteInstrumentAdded(instrument)
    processInstrumentsVersion.wrappingAdd(1, ordering: .releasing)
  }

  /// Detaches a process-wide instrument.
  ///
  /// ```swift
  /// EventRunLoop.removeProcessInstrument(tracer)
  /// ```
  public static func removeProcessInstrument(_ instrument: any RunLoopInstrument) {
    let removed = processInstruments.withLock { list -> Bool in
      guard let index = list.firstIndex(where: { $0 === instrument }) else { return false }
      list.remove(at: index)
      return true
    }
    if removed {
      noteInstrumentRemoved(instrument)
      processInstrumentsVersion.wrappingAdd(1, ordering: .releasing)
    }
  }

  /// Plugs a deadline provider (the Timers module's timer table) into this loop. Safe from
  /// any thread; adding the same provider twice does nothing.
  ///
  /// ```swift
  /// loop.addDeadlineProvider(timerTable)
  /// ```
  public func addDeadlineProvider(_ provider: any LoopDeadlineProvider) {
    let added = state.withLock { state -> Bool in
      guard !state.providers.contains(where: { $0 === provider }) else { return false }
      state.providers.append(provider)
      return true
    }
    // The loop's own thread is not asleep, and it asks every provider for its deadline
    // before it next sleeps: a wake-up from here would only cost an empty pass.
    if added && !isCurrent { wakeUp() }
  }

  /// Unplugs a deadline provider. Safe from any thread.
  ///
  /// ```swift
  /// loop.removeDeadlineProvider(timerTable)
  /// ```
  public func removeDeadlineProvider(_ provider: any LoopDeadlineProvider) {
    let running = state.withLock { state -> Bool in
      state.providers.removeAll { $0 === provider }
      return !state.frames.isEmpty
    }
    // A sleeping loop holds its providers in its pass snapshot: wake it to let go of this one.
    if running && !isCurrent { wakeUp() }
  }

  /// The deadline providers plugged into this loop.
  ///
  /// ```swift
  /// let plugged = loop.deadlineProviders.contains { $0 === timerTable }
  /// ```
  public var deadlineProviders: [any LoopDeadlineProvider] { state.withLock { $0.providers } }

  /// Called by the thread-exit destructor, on the exiting thread: nothing queued can run any
  /// more, and every item leaves the loop (sources get their `cancel` call-outs), as
  /// CFRunLoop does when a thread's loop is finalised. This also breaks the usual cycle of a
  /// source whose closure captures its loop, so the loop and its descriptors are released.
  func threadDidExit() {
    // Everything is taken out under the lock and released after it: freeing a provider frees
    // its timers, and freeing a source, watch or instrument frees what its closures captured,
    // whose deinits may use this loop.
    var providers: [any LoopDeadlineProvider] = []
    var instruments: [any RunLoopInstrument] = []
    var watches: [DescriptorWatch] = []
    var abandoned = RequestList()
    var sources: [(CustomInputSource, LoopMode)] = []
    var executors: [LoopExecutor] = []
    let strandedJobs = state.withLock { state -> Int in
      state.threadExited = true
      swap(&executors, &state.executors)
      return state.jobQueues.reduce(0) { $0 + $1.jobs.count }
    }
    if strandedJobs > 0 {
      // Neither runnable here any more nor elsewhere (see `enqueue(_:)`), and dropped they
      // would leave their tasks suspended for ever.
      fatalError(
        "the thread of \(self) exited with \(strandedJobs) Swift concurrency job(s) still "
          + "queued: an actor or task using this loop as its executor outlived its thread")
    }
    executors.removeAll()
    state.withLock { state in
      swap(&abandoned, &state.performQueue)
      for mode in state.sources.modes {
        for source in state.sources.items(in: mode) {
          state.sources.remove(source, from: mode)
          source.didUnschedule(from: self, mode: mode)
          let concrete = mode == .common ? state.commonModes.sorted { $0.name < $1.name } : [mode]
          sources += concrete.map { (source, $0) }
        }
      }
      watches = Array(state.watchesByToken.values)
      for watch in watches {
        for mode in state.watches.modes(of: watch) { state.watches.remove(watch, from: mode) }
        unregister(watch, state: &state)
      }
      swap(&providers, &state.providers)
      swap(&instruments, &state.instruments)
    }
    instrumentsVersion.wrappingAdd(1, ordering: .releasing)
    local.instrumentCache = InstrumentCache()
    local.passCache = PassCache()
    while let request = abandoned.popFirst() { request.abandon() }
    for (source, mode) in sources { source.cancelHandler?(self, mode) }
    for instrument in instruments { noteInstrumentRemoved(instrument) }
    let everyLoop = processInstruments.withLock { $0 }
    for instrument in instruments { instrument.runLoopThreadDidExit(self) }
    for instrument in everyLoop where !instruments.contains(where: { $0 === instrument }) {
      instrument.runLoopThreadDidExit(self)
    }
    providers.removeAll()
    instruments.removeAll()
    watches.removeAll()
  }

}

extension EventRunLoop: Hashable, CustomStringConvertible {
  /// Loops are equal only to themselves.
  ///
  /// ```swift
  /// EventRunLoop.current == EventRunLoop.main  // true only on the main thread
  /// ```
  public static func == (lhs: EventRunLoop, rhs: EventRunLoop) -> Bool { lhs === rhs }

  /// Hashes the loop's identity.
  ///
  /// ```swift
  /// let passes: [EventRunLoop: Int] = [EventRunLoop.current: 0]
  /// ```
  public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

  /// `EventRunLoop(id: 3, thread: 1234)`.
  ///
  /// ```swift
  /// print(EventRunLoop.current)  // EventRunLoop(id: 1, thread: 4242)
  /// ```
  public var description: String { "EventRunLoop(id: \(id), thread: \(threadID))" }
}

/// The state every thread may touch, guarded by `EventRunLoop.state`.
struct LoopState {
  // Each change to what a pass reads (modes, sources, watches, providers, held descriptors)
  // moves `published.structure` on, so the loop thread can keep its snapshot of those
  // (`PassCache`) for as long as the number has not moved, without taking this lock.
  // Observers without `oldValue` mutate in place: no copy of the tables.
  let published: PublishedState
  var commonModes: Set<LoopMode> = [.default] { didSet { published.structureDidChange() } }
  var sources = LoopModeTable<CustomInputSource>() { didSet { published.structureDidChange() } }
  var watches = LoopModeTable<DescriptorWatch>() { didSet { published.structureDidChange() } }
  var watchesByToken: [UInt64: DescriptorWatch] = [:]
  var watchedDescriptors: Set<Int32> = []
  // Watches that became ready while the loop ran a mode they are not in; their epoll
  // interest is off until a run in one of their modes turns it back on.
  var heldTokens: Set<UInt64> = [] { didSet { published.structureDidChange() } }
  var performQueue = RequestList() {
    didSet { published.performCount.store(performQueue.count, ordering: .sequentiallyConsistent) }
  }
  var frames: [RunFrame] = [] {
    didSet {
      let pending = frames.contains { $0.stopRequested }
      published.stopPending.store(pending, ordering: .sequentiallyConsistent)
    }
  }
  var providers: [any LoopDeadlineProvider] = [] { didSet { published.structureDidChange() } }
  var instruments: [any RunLoopInstrument] = []
  var threadExited = false
  var mainQueueWatchInstalled = false
  // Swift concurrency jobs, one queue per executor of the loop (slot 0: the loop itself,
  // then its `LoopExecutor`s, which the loop keeps for its thread's life).
  var jobQueues: [JobQueue] = []
  var executors: [LoopExecutor] = []

  init(published: PublishedState) {
    self.published = published
  }
}

/// Facts about `LoopState` that its lock publishes as atomics, so that a pass with nothing
/// new to do takes no lock: the loop thread reads these, and takes the lock only when one
/// says there is something to look at. Every store happens under the state's lock, and
/// every access is sequentially consistent: together with the fence in `wakeUp()`, a change
/// made before a wake-up is either seen by the pass after it or wakes the loop again.
final class PublishedState: Sendable {
  /// Moves on with every change to the modes, sources, watches, providers or held set.
  let structure = Atomic<UInt64>(0)
  /// How many perform requests are queued.
  let performCount = Atomic<Int>(0)
  /// How many Swift concurrency jobs are queued, in all of the loop's executors.
  let jobCount = Atomic<Int>(0)
  /// Whether some active run has a stop request it has not seen yet.
  let stopPending = Atomic<Bool>(false)

  func structureDidChange() {
    structure.wrappingAdd(1, ordering: .sequentiallyConsistent)
  }
}

/// One active run of the loop.
struct RunFrame {
  let mode: LoopMode
  var stopRequested = false
}

/// What only the loop's own thread touches.
struct LoopThreadState {
  var iteration: UInt64 = 0
  // Counts runs started on this loop, so a pass can tell that a call-out ran a nested run.
  var runsStarted: UInt64 = 0
  var modes: [LoopMode] = []
  var instrumentCache = InstrumentCache()
  var passCache = PassCache()
  // How long the next sleep may poll before it blocks (see `blockingWait(into:)`).
  var spin = SpinWindow()
}

/// The loop thread's snapshot of what a pass in one mode reads from `LoopState`, valid while
/// `PublishedState.structure` still equals `structure`.
struct PassCache {
  var structure: UInt64 = .max
  var mode: LoopMode?
  var isCommon = false
  /// The custom sources of the mode, in call-out order.
  var sources: [CustomInputSource] = []
  /// Whether the mode has descriptor watches.
  var hasWatches = false
  /// Whether some watch is held out of the epoll set.
  var hasHeld = false
  var providers: [any LoopDeadlineProvider] = []
}

/// The loop thread's copy of its instruments (its own and the process's), refreshed when
/// either list changes, so that notifying costs two atomic loads when nothing changed.
struct InstrumentCache {
  var localVersion: UInt64 = .max
  var processVersion: UInt64 = .max
  var instruments: [any RunLoopInstrument] = []
  var interests: InstrumentInterests = []
}

// The thread-local slot holding each thread's loop; the destructor runs at thread exit.
private let currentLoopKey: pthread_key_t = {
  var key = pthread_key_t()
  let status = pthread_key_create(&key) { pointer in
    guard let pointer else { return }
    let loop = Unmanaged<EventRunLoop>.fromOpaque(pointer).takeRetainedValue()
    loop.threadDidExit()
  }
  precondition(status == 0, "pthread_key_create failed: \(status)")
  return key
}()

private let mainLoopInstance = EventRunLoop.makeOrStop(threadID: getpid(), isMain: true)

let processInstruments = GuardedState<[any RunLoopInstrument]>([])
let processInstrumentsVersion = Atomic<UInt64>(0)
// How many instruments anywhere want call-outs; while 0, signals record no time stamps.
let calloutInstrumentCount = Atomic<Int>(0)

private func noteInstrumentAdded(_ instrument: any RunLoopInstrument) {
  guard instrument.interests.contains(.callouts) else { return }
  calloutInstrumentCount.wrappingAdd(1, ordering: .relaxed)
}

private func noteInstrumentRemoved(_ instrument: any RunLoopInstrument) {
  guard instrument.interests.contains(.callouts) else { return }
  calloutInstrumentCount.wrappingSubtract(1, ordering: .relaxed)
}
