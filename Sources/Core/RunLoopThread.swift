import CRunLoopLinux
import Dispatch
import Glibc
import Synchronization

/// A thread that owns a run loop, after the guide's "Thread Management" chapter (the role
/// of Foundation's `Thread`, whose name we leave to Foundation).
///
/// The entry closure runs on the new thread and receives the thread object; the thread's
/// ``runLoop`` exists before it starts, so other threads can add sources to it and perform
/// on it as soon as ``start()`` returns.
///
/// ```swift
/// let worker = RunLoopThread(name: "worker") { thread in
///   let loop = thread.runLoop
///   try loop.add(CustomInputSource { print("job") }, mode: .default)
///   try loop.run()
/// }
/// try worker.start()
/// worker.runLoop.perform { print("on the worker") }
/// worker.runLoop.stop()
/// try worker.join()
/// ```
///
/// An error thrown by the entry closure is never lost: `join()` (blocking or awaited) throws it (wrapped as
/// ``RunLoopError/Code/threadFailed``), ``failure`` keeps it, and it is passed to
/// ``failureHandler`` (which prints to standard error unless replaced).
public final class RunLoopThread: Sendable {
  /// The thread's name (Linux keeps the first 15 bytes for tools such as `top`).
  ///
  /// ```swift
  /// print("running on", RunLoopThread.current?.name ?? "a thread RunLoopThread did not create")
  /// ```
  public let name: String
  /// The stack size asked for, or `nil` for the system default.
  ///
  /// ```swift
  /// let deep = RunLoopThread(name: "deep", stackSize: 8 << 20) { _ in recurse() }
  /// deep.stackSize  // 8388608
  /// ```
  public let stackSize: Int?
  /// The priority asked for, or `nil` to inherit.
  ///
  /// ```swift
  /// let indexer = RunLoopThread(name: "indexer", priority: .nice(10)) { _ in index() }
  /// indexer.priority  // .nice(10)
  /// ```
  public let priority: ThreadPriority?
  /// Whether the thread is detached: it cannot be joined and cleans up by itself.
  ///
  /// ```swift
  /// let logger = RunLoopThread(name: "logger", detached: true) { _ in flushLogs() }
  /// logger.isDetached  // true: join() throws invalidState
  /// ```
  public let isDetached: Bool

  private let entry: @Sendable (RunLoopThread) throws -> Void
  private let stateBits = Atomic<UInt8>(State.created.rawValue)
  private let cancelled = Atomic<Bool>(false)
  private let stopRequested = Atomic<Bool>(false)
  // Guarded by its own lock.
  private let shared = GuardedState(Shared())
  private let started = DispatchSemaphore(value: 0)

  private struct Shared {
    var loop: EventRunLoop?
    var handle: pthread_t?
    var threadID: pid_t = 0
    var failure: (any Error)?
    var startError: RunLoopError?
    var joined = false
    var dictionary: [String: any Sendable] = [:]
  }

  /// Creates a thread; nothing runs until ``start()``.
  ///
  /// - Parameters:
  ///   - name: the thread's name, visible in traces and in `top -H`.
  ///   - stackSize: bytes of stack; at least `PTHREAD_STACK_MIN` (16 KiB here).
  ///   - priority: the scheduling priority to apply when the thread starts.
  ///   - detached: a detached thread cannot be joined.
  ///   - entry: the thread's work; it runs on the new thread.
  ///
  /// ```swift
  /// let thread = RunLoopThread(name: "io", stackSize: 1 << 20) { thread in try thread.runLoop.run() }
  /// ```
  public init(
    name: String, stackSize: Int? = nil, priority: ThreadPriority? = nil, detached: Bool = false,
    entry: @escaping @Sendable (RunLoopThread) throws -> Void
  ) {
    self.name = name
    self.stackSize = stackSize
    self.priority = priority
    self.isDetached = detached
    self.entry = entry
  }

  /// Whether any ``RunLoopThread`` was ever started in this process (Foundation's
  /// `isMultiThreaded`).
  ///
  /// ```swift
  /// if RunLoopThread.isMultiThreaded { print("threads were started") }
  /// ```
  public static var isMultiThreaded: Bool { multiThreaded.load(ordering: .acquiring) }

  /// The ``RunLoopThread`` running the calling code, or `nil` on a thread this type did not
  /// create (the main thread, Dispatch's threads).
  ///
  /// ```swift
  /// RunLoopThread.current?.name
  /// ```
  public static var current: RunLoopThread? {
    guard let pointer = pthread_getspecific(currentThreadKey) else { return nil }
    // The slot holds an unretained reference, set by `main()` for the thread's life, while
    // the thread itself keeps the object alive (see `start()`).
    return Unmanaged<RunLoopThread>.fromOpaque(pointer).takeUnretainedValue()
  }

  /// Receives every error thrown by an entry closure, on the failing thread. The default
  /// prints it to standard error. Replace it to log elsewhere.
  ///
  /// ```swift
  /// RunLoopThread.failureHandler = { thread, error in log("\(thread.name): \(error)") }
  /// ```
  public static var failureHandler: @Sendable (RunLoopThread, any Error) -> Void {
    get { failureHandlerStorage.withLock { $0 } }
    set { failureHandlerStorage.withLock { $0 = newValue } }
  }

  /// The stack size of the calling thread, as the system reports it (0 when unknown).
  ///
  /// ```swift
  /// let thread = RunLoopThread(name: "deep", stackSize: 8 << 20) { _ in
  ///   print(RunLoopThread.currentStackSize)  // 8388608
  /// }
  /// ```
  public static var currentStackSize: Int { Int(crl_current_stack_size()) }

  /// The thread's state.
  ///
  /// ```swift
  /// try worker.start()
  /// worker.state  // .executing until the entry closure returns
  /// ```
  public var state: State { State(rawValue: stateBits.load(ordering: .acquiring)) ?? .created }

  /// The error the entry closure threw, if it did.
  ///
  /// ```swift
  /// if let error = worker.failure { print("the worker failed:", error) }
  /// ```
  public var failure: (any Error)? { shared.withLock { $0.failure } }

  /// The kernel thread id, once started.
  ///
  /// ```swift
  /// if let tid = worker.threadID { print("the worker is thread", tid) }
  /// ```
  public var threadID: pid_t? { shared.withLock { $0.threadID == 0 ? nil : $0.threadID } }

  /// The thread's run loop. It exists once ``start()`` has returned; before that, reading
  /// it stops the process with a message.
  ///
  /// ```swift
  /// try worker.start()
  /// try worker.runLoop.add(source, mode: .default)
  /// ```
  public var runLoop: EventRunLoop {
    guard let loop = shared.withLock({ $0.loop }) else {
      fatalError("RunLoopThread '\(name)': runLoop is available once start() has returned")
    }
    return loop
  }

  /// Asks the thread to finish; the entry closure checks ``isCancelled`` (Foundation's
  /// `cancel()`). It does not interrupt anything by itself.
  ///
  /// ```swift
  /// worker.cancel()
  /// worker.runLoop.stop()  // the entry closure's loop then checks isCancelled
  /// ```
  public func cancel() { cancelled.store(true, ordering: .releasing) }

  /// Marks the thread as asked to stop; returns whether this call was the first to ask.
  func requestStopOnce() -> Bool {
    !stopRequested.exchange(true, ordering: .acquiringAndReleasing)
  }

  /// Whether ``cancel()`` was called.
  ///
  /// ```swift
  /// while !thread.isCancelled {
  ///   _ = try thread.runLoop.run(mode: .default, timeout: .seconds(1))
  /// }
  /// ```
  public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

  /// Reads and writes the thread's dictionary (Foundation's `threadDictionary`), from any
  /// thread.
  ///
  /// ```swift
  /// worker.withThreadDictionary { $0["exitNow"] = true }
  /// ```
  public func withThreadDictionary<Result>(_ body: (inout [String: any Sendable]) -> Result)
    -> Result
  {
    shared.withLock { body(&$0.dictionary) }
  }

  /// Starts the thread and returns once its run loop exists and its priority is applied.
  ///
  /// ```swift
  /// try worker.start()
  /// worker.runLoop.perform { print("on the worker") }
  /// ```
  ///
  /// - Throws: ``RunLoopError/Code/invalidState`` when started twice;
  ///   ``RunLoopError/Code/invalidArgument`` for a stack size the system refuses;
  ///   ``RunLoopError/Code/systemCallFailed`` when the system refuses the thread or its
  ///   priority; ``RunLoopError/Code/loopCreationFailed`` when it refuses the descriptors of
  ///   the thread's run loop (in every case the entry closure never runs).
  public func start() throws(RunLoopError) {
    guard
      stateBits.compareExchange(
        expected: State.created.rawValue, desired: State.executing.rawValue,
        ordering: .acquiringAndReleasing
      ).exchanged
    else {
      throw .invalidState("thread '\(name)' was already started")
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    if let stackSize {
      let status = pthread_attr_setstacksize(&attributes, stackSize)
      guard status == 0 else {
        stateBits.store(State.created.rawValue, ordering: .releasing)
        throw .invalidArgument(
          "stack size \(stackSize) refused: at least \(Int(PTHREAD_STACK_MIN)) bytes are needed")
      }
    }
    var handle = pthread_t()
    // One reference handed to the new thread through pthread_create's context pointer: the
    // thread takes it back on entry (or this function does, when the thread was not made),
    // so the object lives at least as long as its thread runs.
    let context = Unmanaged.passRetained(self).toOpaque()
    let status = pthread_create(
      &handle, &attributes,
      { context in
        let thread = Unmanaged<RunLoopThread>.fromOpaque(context!).takeRetainedValue()
        thread.main()
        return nil
      }, context)
    guard status == 0 else {
      Unmanaged<RunLoopThread>.fromOpaque(context).release()
      stateBits.store(State.created.rawValue, ordering: .releasing)
      throw .systemCall("pthread_create", errno: status)
    }
    multiThreaded.store(true, ordering: .releasing)
    if isDetached { pthread_detach(handle) }
    shared.withLock { $0.handle = handle }
    started.wait()
    if let error = shared.withLock({ $0.startError }) {
      if !isDetached { pthread_join(handle, nil) }
      shared.withLock { $0.joined = true }
      throw error
    }
  }

  /// Waits for the thread to finish.
  ///
  /// ```swift
  /// worker.runLoop.stop()
  /// try worker.join()
  /// ```
  ///
  /// - Throws: ``RunLoopError/Code/threadFailed`` when the entry closure threw (``failure``
  ///   has the original error); ``RunLoopError/Code/invalidState`` for a detached thread, a
  ///   thread never started, a second join, or a join from the thread itself.
  public func join() throws(RunLoopError) {
    try reap(claimJoin())
  }

  /// Checks that the thread may be joined, by the caller and once; returns its handle.
  func claimJoin() throws(RunLoopError) -> pthread_t {
    guard !isDetached else {
      throw .invalidState("thread '\(name)' is detached and cannot be joined")
    }
    // Before the claim, and known from the thread's own slot (its entry may run before
    // `start()` has stored the handle): a thread's failed join of itself leaves the join to
    // others.
    guard Self.current !== self else { throw .invalidState("thread '\(name)' cannot join itself") }
    let handle = try shared.withLock { shared throws(RunLoopError) -> pthread_t in
      guard let handle = shared.handle else {
        throw .invalidState("thread '\(name)' was never started")
      }
      guard !shared.joined else { throw .invalidState("thread '\(name)' was already joined") }
      shared.joined = true
      return handle
    }
    return handle
  }

  /// Waits for the thread's end and reports its entry closure's failure.
  func reap(_ handle: pthread_t) throws(RunLoopError) {
    pthread_join(handle, nil)
    if let failure {
      throw RunLoopError(code: .threadFailed, message: "thread '\(name)' failed: \(failure)")
    }
  }

  /// The body of the new thread.
  private func main() {
    // Unretained: `self` outlives this function, which is the thread's whole life.
    pthread_setspecific(currentThreadKey, Unmanaged.passUnretained(self).toOpaque())
    defer { pthread_setspecific(currentThreadKey, nil) }
    _ = crl_set_thread_name(name.prefix15)
    let tid = crl_current_tid()
    var loop: EventRunLoop?
    var startError: RunLoopError?
    do {
      loop = try EventRunLoop.makeCurrent()
    } catch {
      startError = error
    }
    if startError == nil, let priority {
      startError = Self.apply(priority, threadID: tid)
    }
    shared.withLock { shared in
      shared.loop = loop
      shared.threadID = tid
      shared.startError = startError
    }
    started.signal()
    guard startError == nil else { return }
    do {
      try entry(self)
    } catch {
      shared.withLock { $0.failure = error }
      Self.failureHandler(self, error)
    }
    stateBits.store(State.finished.rawValue, ordering: .releasing)
  }

  private static func apply(_ priority: ThreadPriority, threadID: pid_t) -> RunLoopError? {
    switch priority {
    case .nice(let value):
      guard (-20...19).contains(value) else {
        return .invalidArgument("nice value \(value) is outside -20...19")
      }
      if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(threadID), value) != 0 {
        return .systemCall("setpriority(nice \(value))", errno: errno)
      }
    case .realtimeFIFO(let value), .realtimeRoundRobin(let value):
      var parameters = sched_param()
      parameters.sched_priority = value
      let policy: Int32 = {
        if case .realtimeFIFO = priority { return SCHED_FIFO }
        return SCHED_RR
      }()
      let status = pthread_setschedparam(pthread_self(), policy, &parameters)
      if status != 0 {
        return .systemCall("pthread_setschedparam(priority \(value))", errno: status)
      }
    }
    return nil
  }
}

extension RunLoopError.Code {
  /// A thread's entry closure threw.
  ///
  /// ```swift
  /// if error.code == .threadFailed, let cause = worker.failure { print(cause) }
  /// ```
  public static let threadFailed = RunLoopError.Code("threadFailed")
}

extension String {
  /// The name cut to the 15 bytes Linux keeps for a thread name, on a character boundary.
  fileprivate var prefix15: String {
    var result = ""
    for character in self {
      if result.utf8.count + character.utf8.count > 15 { break }
      result.append(character)
    }
    return result
  }
}

private let multiThreaded = Atomic<Bool>(false)

private let failureHandlerStorage = GuardedState<@Sendable (RunLoopThread, any Error) -> Void> {
  thread, error in
  writeStandardError("RunLoopThread '\(thread.name)' failed: \(error)")
}

private let currentThreadKey: pthread_key_t = {
  var key = pthread_key_t()
  let status = pthread_key_create(&key, nil)
  precondition(status == 0, "pthread_key_create failed: \(status)")
  return key
}()
