import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Synchronization
import Testing

@Suite("Signal sources")
struct SignalSourceTests {
  @Test func signalsSentToTheLoopThreadAreReadAsEvents() throws {
    let received = GuardedState<[ReceivedSignal]>([])
    try onNewThread("signals") { loop in
      // Thread-directed signals at this thread, which blocks them as the test's threads all
      // do: they stay pending for the source's signalfd, and the other threads of the test
      // process are not disturbed.
      let source = try SignalSource(signals: [SIGUSR1, SIGHUP]) { signal in
        received.withLock { $0.append(signal) }
      }
      try source.add(to: loop, mode: .default)
      let me = pthread_self()
      pthread_kill(me, SIGUSR1)
      pthread_kill(me, SIGHUP)
      try run(loop) { received.withLock { $0.count } >= 2 }
      source.invalidate()
    }
    let signals = received.withLock { $0 }
    #expect(Set(signals.map(\.signal)) == [SIGUSR1, SIGHUP])
    #expect(signals.allSatisfy { $0.senderPID == getpid() && $0.senderUID == getuid() })
  }

  @Test func unblockableOrMissingSignalsAreRejected() {
    #expect(throws: RunLoopError.invalidArgument("")) {
      try SignalSource(signals: [SIGKILL]) { _ in }
    }
    #expect(throws: RunLoopError.invalidArgument("")) {
      try SignalSource(signals: []) { _ in }
    }
    #expect(throws: RunLoopError.invalidArgument("")) {
      try SignalSource.block([4096])
    }
  }
}

@Suite("Signal sources in a separate process")
struct ProcessSignalTests {
  /// Process-directed signals (`kill`), the old way: the helper blocks SIGTERM and SIGHUP
  /// before any thread exists, so they stay pending and the source reads its `signalfd`.
  @Test func blockedProcessSignalsReachTheMainRunLoop() throws {
    let helper = try HelperProcess(["ports-signals"])
    #expect(helper.readLine() == "ready")
    helper.signal(SIGHUP)
    #expect(helper.readLine() == "hup from \(getpid())")
    helper.signal(SIGTERM)
    #expect(helper.readLine() == "term from \(getpid())")
    // It stopped its loop and exited normally: the signal never killed it.
    #expect(helper.waitForExit() == 0)
  }

  /// The helper blocks nothing and runs four loop threads and Swift concurrency tasks; each
  /// SIGUSR1, process-directed (the kernel picks a thread) or sent to each thread that can
  /// take it, reaches the source on one loop, and SIGTERM ends it normally.
  @Test func unblockedSignalsReachTheSourceWhicheverThreadTakesThem() throws {
    let helper = try HelperProcess(["ports-signals-unblocked"])
    let threadLine = try #require(helper.readLine())
    #expect(threadLine.hasPrefix("threads "))
    let threads = threadLine.split(separator: " ").dropFirst().compactMap { pid_t($0) }
    #expect(threads.count == 5)
    #expect(helper.readLine() == "ready")
    for thread in threads {
      let blocked = procStatusField("/proc/\(helper.pid)/task/\(thread)/status", "SigBlk")
      #expect(blocked == "0000000000000000", "thread \(thread) blocks \(blocked ?? "?")")
    }
    // The concurrency pool's threads exist beside the main thread and the four loops.
    let tasks = procDirectoryEntries("/proc/\(helper.pid)/task")
    #expect(tasks.count > threads.count, "threads: \(tasks)")
    var lines: [String] = []
    for _ in 0..<8 {
      helper.signal(SIGUSR1)
      lines.append(helper.readLine() ?? "none")
    }
    // Under ThreadSanitizer a caught signal waits for the receiving thread's next call that
    // TSan intercepts, and a loop asleep in the raw epoll_wait system call makes none; there
    // only the process-directed signals, which a thread that is not asleep takes, are sent.
    let targeted = Self.underThreadSanitizer ? [] : threads
    for thread in targeted {
      #expect(helper.signal(SIGUSR1, thread: thread))
      lines.append(helper.readLine() ?? "none")
    }
    #expect(lines == Array(repeating: "usr1 from \(getpid())", count: 8 + targeted.count))
    helper.signal(SIGTERM)
    #expect(helper.readLine() == "term from \(getpid())")
    #expect(helper.waitForExit() == 0)
  }

  /// Whether this test binary runs under ThreadSanitizer (its runtime is linked in).
  static let underThreadSanitizer =
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

  /// A source for SIGUSR1 and a Dispatch signal source for SIGTERM made after it (what a
  /// ServiceGroup makes), in a process that blocks nothing: Dispatch's handler replaces
  /// nothing of the source's, each SIGUSR1 reaches the source and SIGTERM reaches Dispatch.
  // Under ThreadSanitizer the helper's only thread that takes signals sleeps in the raw
  // epoll_wait system call, and TSan holds a caught signal until the thread's next call it
  // intercepts: a signal's line may come one signal late.
  @Test(.disabled(if: underThreadSanitizer, "TSan delays signals to a thread asleep in epoll"))
  func aSourceAndADispatchSignalSourceForAnotherSignalBothReceiveTheirs() throws {
    let helper = try HelperProcess(["ports-signals-dispatch"])
    #expect(helper.readLine() == "ready")
    var lines: [String] = []
    for _ in 0..<4 {
      helper.signal(SIGUSR1)
      lines.append(helper.readLine() ?? "none")
    }
    #expect(lines == Array(repeating: "source usr1 from \(getpid())", count: 4))
    helper.signal(SIGTERM)
    #expect(helper.readLine() == "dispatch term")
    #expect(helper.waitForExit() == 0)
  }
}

/// Counts the calls of the handler that was there before the sources.
private let previousHandlerCalls = Atomic<Int>(0)

@Suite("Signal sources beside another handler")
struct SignalSourceChainTests {
  /// SIGPWR, which no other test uses: a handler of the test's own is installed first; two
  /// sources both receive the signal, the old handler is still called, and invalidating the
  /// last source puts it back.
  @Test func aPreviousHandlerIsChainedToAndPutBackByTheLastSource() throws {
    var mine = sigaction()
    mine.__sigaction_handler.sa_handler = { _ in previousHandlerCalls.add(1, ordering: .relaxed) }
    var saved = sigaction()
    sigaction(SIGPWR, &mine, &saved)
    defer { sigaction(SIGPWR, &saved, nil) }
    let mineAddress = Self.currentHandlerAddress()
    let received = GuardedState<[Int]>([])
    let handlers = try onNewThread("chain") { loop -> [Bool] in
      // The test's threads block every signal, and so does this one; the handler runs only
      // on a thread that does not block the signal.
      var set = sigset_t()
      sigemptyset(&set)
      sigaddset(&set, SIGPWR)
      pthread_sigmask(SIG_UNBLOCK, &set, nil)
      let first = try SignalSource(signals: [SIGPWR]) { _ in received.withLock { $0.append(1) } }
      let second = try SignalSource(signals: [SIGPWR]) { _ in received.withLock { $0.append(2) } }
      try first.add(to: loop, mode: .default)
      try second.add(to: loop, mode: .default)
      pthread_kill(pthread_self(), SIGPWR)
      try run(loop) { received.withLock { $0.count } >= 2 }
      first.invalidate()
      let mineAfterFirst = Self.currentHandlerAddress() == mineAddress
      second.invalidate()
      let mineAfterSecond = Self.currentHandlerAddress() == mineAddress
      pthread_kill(pthread_self(), SIGPWR)
      return [mineAfterFirst, mineAfterSecond]
    }
    #expect(received.withLock { $0 }.sorted() == [1, 2])
    #expect(handlers == [false, true])
    #expect(previousHandlerCalls.load(ordering: .relaxed) == 2)
  }

  private static func currentHandlerAddress() -> Int {
    var current = sigaction()
    sigaction(SIGPWR, nil, &current)
    return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
  }
}

@Suite("Signal sources invalidated by their handler")
struct SignalSourceInvalidationTests {
  /// The handler closes the source's descriptors by invalidating it and opens a pipe, which
  /// gets a number the source read from: the source must not read on from it. SIGWINCH,
  /// which no other test uses: a source receives every signal of its kind the process takes.
  @Test func handlerInvalidatingItsSourceEndsTheDrain() throws {
    let calls = GuardedState<[Int32]>([])
    let pipes = GuardedState<[Int32]>([])
    try onNewThread("signals") { loop in
      let box = GuardedState<SignalSource?>(nil)
      let source = try SignalSource(signals: [SIGWINCH]) { received in
        calls.withLock { $0.append(received.signal) }
        guard let me = box.withLock({ $0 }), me.isValid else { return }
        me.invalidate()
        // Takes the lowest free number: the signalfd's. Non-blocking, so a read cannot hang.
        var fds: [Int32] = [0, 0]
        _ = pipe(&fds)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        var junk = [UInt8](repeating: 0x7F, count: 128)
        _ = write(fds[1], &junk, 128)
        pipes.withLock { $0 += fds }
      }
      box.withLock { $0 = source }
      try source.add(to: loop, mode: .default)
      pthread_kill(pthread_self(), SIGWINCH)
      try run(loop, seconds: 1) { !source.isValid }
      box.withLock { $0 = nil }
    }
    for fd in pipes.withLock({ $0 }) { close(fd) }
    #expect(calls.withLock { $0 } == [SIGWINCH], "handler called with \(calls.withLock { $0 })")
  }
}
