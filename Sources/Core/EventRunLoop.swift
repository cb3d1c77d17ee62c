import CRunLoopLinux
import Dispatch
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
/// ``stop()``, ``wakeUp()``, ``perform(inModes:name:_:)->PerformRequest``) is safe from any thread, as the
/// guide's "Thread Safety and Run Loop Objects" describes for CoreFoundation.
public final class EventRunLoop: @unchecked Sendable {
  // Unchecked: `local` is a `var` the compiler cannot prove is touched by one thread; only
  // the loop's thread touches it (`assertOnLoopThread()`). Everything else is a `let` of a
  // Sendable type, a `GuardedState` or an atomic.
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
  // The wake-up protocol: whether a wake-up is outstanding, or how the loop waits.
  let waker: Waker
  /// The custom sources signalled for this loop and not yet performed (step 4 reads them).
  let signalInbox = SignalInbox()
  // The active runs as other threads see them: how deep, and a stop request.
  let runs: ActiveRuns
  // Changes whenever the loop's own instruments change.
  let instrumentsVersion = Atomic<UInt64>(0)
  // The longest a sleep may poll before blocking, in nanoseconds (see `spinLimit`).
  let pollingLimit = Atomic<Int64>(defaultPollingLimit.load(ordering: .relaxed))
  let pollingCounters = PollingCounters()
  // Loop thread only (see `assertOnLoopThread()`). Exempt from the run-time exclusivity
  // check: only one thread touches it, and a pass reads and writes it dozens of times; the
  // check is a runtime call per access (figures in Docs/Performance.md, "What the
  // annotations buy").
  @exclusivity(unchecked) var local = LoopThreadState()
  // The owning thread's pthread handle, for `isCurrent` (not for the main loop, which any
  // thread may create). glibc reuses a handle once its thread is gone, so `ownerExited`
  // goes with it, and so does the fork generation the loop was made in: in a forked child
  // the parent's other threads are gone without exiting.
  private let owner: pthread_t
  private let forkGeneration: UInt64
  // Set first thing as the owning thread exits, before its handle can be reused.
  private let ownerExited = Atomic<Bool>(false)

  /// Creates the loop of thread `threadID`; a loop that is not the main one is created on
  /// its own thread.
  init(threadID: pid_t, isMain: Bool) throws(RunLoopError) {
    self.id = loopIdentityCounter.wrappingAdd(1, ordering: .relaxed).newValue
    self.threadID = threadID
    self.isMain = isMain
    self.owner = isMain ? 0 : pthread_self()
    self.forkGeneration = crl_fork_generation()
    let published = PublishedState()
    self.published = published
    let runs = ActiveRuns()
    self.runs = runs
    self.state = GuardedState(LoopState(published: published))
    let poller = try Poller()
    self.poller = poller
    self.waker = Waker(eventDescriptor: poller.wakeDescriptor)
    _ = pollingSlotsResetInForkedChild
    if isMain { mainLoopID.store(id, ordering: .relaxed) }
  }

  /// The calling thread's run loop, created on first use.
  ///
  /// ```swift
  /// let loop = EventRunLoop.current
  /// assert(loop === EventRunLoop.current)  // stable for the thread's whole life
  /// ```
  ///
  /// The loop lives as long as its thread (and as long as anyone holds it). Creating it needs
  /// three descriptors (`epoll`, `eventfd`, `timerfd`); when the system refuses one (no
  /// descriptor left, no memory), `current` stops the process with a message naming the
  /// failed call. A program that must outlive that failure asks ``makeCurrent()`` instead,
  /// which throws it.
  public static var current: EventRunLoop {
    let tid = crl_current_tid()
    if tid == getpid() { return main }
    // The slot holds one retained reference (taken below, given back by the key's destructor
    // at thread exit); reading it borrows that reference without retaining again.
    if let stored = pthread_getspecific(currentLoopKey) {
      return Unmanaged<EventRunLoop>.fromOpaque(stored).takeUnretainedValue()
    }
    do {
      return try makeThreadLoop(threadID: tid)
    } catch {
      fatalError("\(error.message) (EventRunLoop.makeCurrent() throws this instead)")
    }
  }

  /// The calling thread's run loop, created on first use, or the error that keeps it from
  /// being created: what ``current`` returns, without stopping the process when the system
  /// refuses the loop's descriptors.
  ///
  /// ```swift
  /// let loop: EventRunLoop
  /// do {
  ///   loop = try EventRunLoop.makeCurrent()
  /// } catch {
  ///   print(error.message)  // cannot create the run loop of thread 4242: eventfd failed: ...
  ///   exit(71)
  /// }
  /// ```
  ///
  /// A failure is not remembered for a thread other than the main one: a later call tries
  /// again. The main thread's loop is made once for the process, so a failure to make it
  /// stays, and ``main`` then stops the process with its message.
  ///
  /// - Throws: ``RunLoopError/Code/loopCreationFailed``, with the failed call and its
  ///   `errno` in the message and ``RunLoopError/systemError``.
  public static func makeCurrent() throws(RunLoopError) -> EventRunLoop {
    let tid = crl_current_tid()
    if tid == getpid() { return try mainLoopCreation.get() }
    if let stored = pthread_getspecific(currentLoopKey) {
      return Unmanaged<EventRunLoop>.fromOpaque(stored).takeUnretainedValue()
    }
    return try makeThreadLoop(threadID: tid)
  }

  /// The main thread's run loop, reachable from any thread.
  ///
  /// ```swift
  /// EventRunLoop.main.perform { print("on the main thread") }
  /// ```
  ///
  /// Made on first use, from whichever thread asks first. When the system refuses its
  /// descriptors, reading it stops the process with a message; ``makeCurrent()``, on the main
  /// thread, throws that error instead.
  public static var main: EventRunLoop {
    switch mainLoopCreation {
    case .success(let loop): return loop
    case .failure(let error):
      fatalError("\(error.message) (EventRunLoop.makeCurrent() throws this instead)")
    }
  }

  /// Makes the calling thread's loop (not the main thread's) and keeps it in the thread's
  /// slot, which holds it until the thread exits.
  private static func makeThreadLoop(threadID: pid_t) throws(RunLoopError) -> EventRunLoop {
    let loop = try make(threadID: threadID, isMain: false)
    pthread_setspecific(currentLoopKey, Unmanaged.passRetained(loop).toOpaque())
    return loop
  }

  /// A new loop, or the reason it cannot be made, as a ``RunLoopError/Code/loopCreationFailed``.
  fileprivate static func make(threadID: pid_t, isMain: Bool) throws(RunLoopError)
    -> EventRunLoop
  {
    do {
      return try EventRunLoop(threadID: threadID, isMain: isMain)
    } catch {
      let owner = isMain ? "the main thread (\(threadID))" : "thread \(threadID)"
      throw RunLoopError(
        code: .loopCreationFailed,
        message: "cannot create the run loop of \(owner): \(error.message)",
        systemError: error.systemError)
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
    // Every perform, job and run asks: `pthread_self()` is a register read, where reading the
    // thread's loop slot (`pthread_getspecific` behind a lazily made key) cost about 40
    // instructions of a zero-timeout run's 900.
    guard pthread_self() == owner, !ownerExited.load(ordering: .acquiring) else { return false }
    // In a forked child, glibc hands the stacks, and so the handles, of the parent's other
    // threads to new threads: there only the thread's loop slot can tell. (The forking
    // thread's slot came along, so its own loop stays current.)
    return crl_fork_generation() == forkGeneration
      || pthread_getspecific(currentLoopKey) == Unmanaged.passUnretained(self).toOpaque()
  }

  /// The mode of the innermost active run, or `nil` when the loop is not running.
  ///
  /// ```swift
  /// let source = CustomInputSource { print(EventRunLoop.current.currentMode!) }
  /// ```
  public var currentMode: LoopMode? {
    if isCurrent { return local.innermostMode }
    return state.withLock { state in
      // Read under the lock: the loop thread publishes a run's mode in `runModes`, under
      // the lock, before the run's depth.
      let depth = runs.depth
      return depth > 0 ? state.runModes[depth - 1] : nil
    }
  }

  /// The step of the guide's "sequence of events" the loop's innermost run is at: 1 for
  /// `entry`, 2 and 3 for the notifications before timers and sources, 4 for custom
  /// sources, 5 for the check for a ready port, 6 to 8 for the sleep and the notifications
  /// around it, 9 for what woke the loop (timers, descriptors), 10 for `exit`. Perform
  /// requests and jobs run at steps 3, 4 and 9. `nil` when no run is active, or off the
  /// loop's thread.
  ///
  /// ```swift
  /// let timer = LoopTimer(after: .milliseconds(10)) { _ in
  ///   print("fired at step", EventRunLoop.current.currentStep!)  // 9
  /// }
  /// ```
  public var currentStep: Int? {
    guard isCurrent, local.depth > 0 else { return nil }
    return Int(local.step)
  }

  /// Whether a run of the loop is active (on its thread).
  ///
  /// ```swift
  /// if loop.isRunning { loop.stop() }
  /// ```
  public var isRunning: Bool { runs.depth > 0 }

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
      return state.sources.items(in: .common).filter { !state.sources.contains($0, in: mode) }
    }
    guard let joining else { return }
    for source in joining { source.scheduleHandler?(self, mode) }
    wakeUp()
  }

  /// Makes a sleeping loop wake and go round its sequence of events again (step 9 restarts
  /// at step 2). Safe from any thread. A call made while the loop is in a pass costs no
  /// system call (the pass's sleep then does not block); one made while it sleeps costs one
  /// `eventfd` write or `futex` wake, and further calls before it wakes cost nothing.
  ///
  /// As in CoreFoundation, a wake-up with nothing to wake is dropped: one made while no run
  /// is active, or while the loop is between waking and its next pass, which looks at
  /// everything a wake-up could announce anyway. Nothing it announces is lost: a request, a
  /// signal, a stop or an emptied mode is seen by the next pass or ends its sleep.
  ///
  /// ```swift
  /// source.signal()
  /// loop.wakeUp()
  /// ```
  public func wakeUp() {
    // Orders the caller's earlier writes (a signal, a queued request) before the wake
    // state is read (see `Waker`).
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    waker.wake()
  }

  /// How many `epoll_wait` calls the loop has made: tests count the system calls of a pass.
  /// Loop thread only.
  package var epollWaits: UInt64 {
    assertOnLoopThread()
    return poller.waits
  }

  /// Checks, in debug builds, that the caller runs on the loop's own thread: the entry
  /// points of the loop-thread-only paths call it (as SwiftNIO's `assertInEventLoop`).
  func assertOnLoopThread(file: StaticString = #fileID, line: UInt = #line) {
    assert(isCurrent, "\(self) used off its thread", file: file, line: line)
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
    if runs.requestStop() { wakeUp() }
  }

  /// Called by the thread-exit destructor, on the exiting thread: nothing queued can run any
  /// more, and every item leaves the loop (sources get their `cancel` call-outs), as
  /// CFRunLoop does when a thread's loop is finalised. This also breaks the usual cycle of a
  /// source whose closure captures its loop, so the loop and its descriptors are released.
  func threadDidExit() {
    // Everything is taken out under the lock and released after it: freeing a deadline source frees
    // its timers, and freeing a source, watch or instrument frees what its closures captured,
    // whose deinits may use this loop.
    var deadlineSources: [any DeadlineSource] = []
    var instruments: [any RunLoopInstrument] = []
    var watches: [DescriptorWatch] = []
    var abandoned = RequestList()
    var sources: [(CustomInputSource, LoopMode)] = []
    var signalled: [CustomInputSource] = []
    var waiting: (requests: RequestList, threads: [DispatchSemaphore]) = (RequestList(), [])
    var executors: [LoopExecutor] = []
    var exitHandlers: [@Sendable () -> Void] = []
    ownerExited.store(true, ordering: .releasing)
    let strandedJobs = state.withLock { state -> Int in
      state.threadExited = true
      exitHandlers = state.exitHandlers.takeAll()
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
      // The requests waiting for room are abandoned with the queued ones; their threads wake.
      waiting = state.performBound.takeLine()
      for mode in state.sources.modes {
        for source in state.sources.items(in: mode) {
          state.sources.remove(source, from: mode)
          source.didUnschedule(from: self, mode: mode)
          let concrete = mode == .common ? state.commonModes.sorted { $0.name < $1.name } : [mode]
          sources += concrete.map { (source, $0) }
        }
      }
      signalled = signalInbox.removeAll()
      watches = Array(state.watchesByToken.values)
      for watch in watches {
        for mode in state.watches.modes(of: watch) { state.watches.remove(watch, from: mode) }
        unregister(watch, state: &state)
      }
      swap(&deadlineSources, &state.deadlineSources)
      swap(&instruments, &state.instruments)
    }
    instrumentsVersion.wrappingAdd(1, ordering: .releasing)
    local.instruments = InstrumentCache()
    local.signalsCheckedFor = nil
    dropPassSnapshot()
    var abandonedCount = 0
    while let request = abandoned.popFirst() { abandonedCount += request.abandon() ? 1 : 0 }
    while let request = waiting.requests.popFirst() {
      abandonedCount += request.abandon() ? 1 : 0
    }
    countAbandoned(abandonedCount)
    for thread in waiting.threads { thread.signal() }
    for (source, mode) in sources { source.cancelHandler?(self, mode) }
    // Last of the loop's own work: sleeps, sequences, port sends and joins end now.
    for handler in exitHandlers { handler() }
    exitHandlers.removeAll()
    for instrument in instruments { noteInstrumentRemoved(instrument) }
    let everyLoop = processInstruments.withLock { $0 }
    for instrument in instruments { instrument.runLoopThreadDidExit(self) }
    for instrument in everyLoop where !instruments.contains(where: { $0 === instrument }) {
      instrument.runLoopThreadDidExit(self)
    }
    deadlineSources.removeAll()
    instruments.removeAll()
    watches.removeAll()
    signalled.removeAll()
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

// The thread-local slot holding each thread's loop; the destructor runs at thread exit.
let currentLoopKey: pthread_key_t = {
  var key = pthread_key_t()
  let status = pthread_key_create(&key) { pointer in
    guard let pointer else { return }
    // Takes back the reference `current` stored, so the loop is released after this.
    let loop = Unmanaged<EventRunLoop>.fromOpaque(pointer).takeRetainedValue()
    loop.threadDidExit()
  }
  precondition(status == 0, "pthread_key_create failed: \(status)")
  return key
}()

// The main thread's loop, or why it could not be made: made once, on first use.
private let mainLoopCreation = Result { () throws(RunLoopError) -> EventRunLoop in
  try EventRunLoop.make(threadID: getpid(), isMain: true)
}

// Numbers loops in the order they are made, for traces.
private let loopIdentityCounter = Atomic<UInt64>(0)
