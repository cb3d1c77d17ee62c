import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Testing

/// `remove(from:mode:)` of the port-based sources: the source leaves that mode (a run of a
/// mode it leaves empty returns `finished`), stays valid, and delivers again once added back.
@Suite("Port-based sources taken out of a mode")
struct SourceRemovalTests {
  @Test func aRemovedInProcessPortLeavesItsModeAndDeliversOnceAddedBack() throws {
    let received = GuardedState<[Int32]>([])
    let results = try onNewThread("port-removal") { loop -> (RunResult, RunResult) in
      let port = try InProcessPort(name: "jobs") { message in
        received.withLock { $0.append(message.msgid) }
      }
      try port.add(to: loop, mode: .default)
      port.remove(from: loop, mode: .default)
      try port.send(msgid: 1, before: .now + .seconds(1))
      let emptied = try loop.run(mode: .default, timeout: .seconds(5))
      // Queued while out of the mode: it waits in the port, and comes once the port is back.
      try port.add(to: loop, mode: .default)
      let handled = try loop.run(
        mode: .default, timeout: .seconds(5), returnAfterSourceHandled: true)
      #expect(port.isValid)
      port.invalidate()
      return (emptied, handled)
    }
    #expect(results.0 == .finished)
    #expect(results.1 == .handledSource)
    #expect(received.withLock { $0 } == [1])
  }

  @Test func aRemovedSignalSourceLeavesItsModeAndDeliversOnceAddedBack() throws {
    let received = GuardedState<[Int32]>([])
    let results = try onNewThread("signal-removal") { loop -> (RunResult, RunResult) in
      let source = try SignalSource(signals: [SIGUSR2]) { signal in
        received.withLock { $0.append(signal.signal) }
      }
      try source.add(to: loop, mode: .default)
      source.remove(from: loop, mode: .default)
      // Blocked on this thread by the source: it stays pending until the source reads it.
      pthread_kill(pthread_self(), SIGUSR2)
      let emptied = try loop.run(mode: .default, timeout: .seconds(5))
      try source.add(to: loop, mode: .default)
      let handled = try loop.run(
        mode: .default, timeout: .seconds(5), returnAfterSourceHandled: true)
      source.invalidate()
      return (emptied, handled)
    }
    #expect(results.0 == .finished)
    #expect(results.1 == .handledSource)
    #expect(received.withLock { $0 } == [SIGUSR2])
  }

  @Test func aRegistryPathThatIsAFileIsRefusedAsNotADirectory() throws {
    let path = "/tmp/runloop-registry-file-\(getpid())"
    let descriptor = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
    #expect(descriptor >= 0)
    close(descriptor)
    defer { unlink(path) }
    #expect(throws: RunLoopError.invalidArgument("")) {
      try PortNameRegistry(directory: path)
    }
  }
}
