import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Testing

@Suite("Signal sources")
struct SignalSourceTests {
  @Test func signalsSentToTheLoopThreadAreReadAsEvents() throws {
    let received = GuardedState<[ReceivedSignal]>([])
    try onNewThread("signals") { loop in
      // Thread-directed signals: only this thread, which blocks them, can receive them, so
      // the test cannot disturb the other threads of the test process.
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
  /// Process-directed signals (`kill`), the real use: the helper blocks SIGTERM and SIGHUP
  /// before any thread exists, then reads them on its main run loop.
  @Test func processSignalsReachTheMainRunLoop() throws {
    let helper = try HelperProcess(["ports-signals"])
    #expect(helper.readLine() == "ready")
    helper.signal(SIGHUP)
    #expect(helper.readLine() == "hup from \(getpid())")
    helper.signal(SIGTERM)
    #expect(helper.readLine() == "term from \(getpid())")
    // It stopped its loop and exited normally: the signal never killed it.
    #expect(helper.waitForExit() == 0)
  }
}

@Suite("Signal sources invalidated by their handler")
struct SignalSourceInvalidationTests {
  /// The handler closes the signalfd by invalidating the source and opens a pipe, which gets
  /// the same descriptor number: the source must not read on from it.
  @Test func handlerInvalidatingItsSourceEndsTheDrain() throws {
    let calls = GuardedState<[Int32]>([])
    let pipes = GuardedState<[Int32]>([])
    try onNewThread("signals") { loop in
      let box = GuardedState<SignalSource?>(nil)
      let source = try SignalSource(signals: [SIGUSR2]) { received in
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
      pthread_kill(pthread_self(), SIGUSR2)
      try run(loop, seconds: 1) { !source.isValid }
      box.withLock { $0 = nil }
    }
    for fd in pipes.withLock({ $0 }) { close(fd) }
    #expect(calls.withLock { $0 } == [SIGUSR2], "handler called with \(calls.withLock { $0 })")
  }
}
