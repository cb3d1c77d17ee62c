import Dispatch
import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Testing

@Suite("Named port servers under load and shutdown", .serialized)
struct NamedPortServerRobustnessTests {
  /// isRegistered() takes the name's lock shared for an instant; a server registering at
  /// that instant must not take it for a live owner.
  @Test func isRegisteredProbesDoNotMakeRegistrationFail() throws {
    let temporary = try TemporaryRegistry()
    let registry = temporary.registry
    // Create the lock file once.
    try NamedPortServer(name: "probe", registry: registry) { _ in nil }.invalidate()
    let stop = GuardedState(false)
    let prober = BackgroundJob {
      while !stop.withLock({ $0 }) { _ = registry.isRegistered("probe") }
    }
    var spurious = 0
    for _ in 0..<2000 {
      let result = Result { () throws(RunLoopError) -> NamedPortServer in
        try NamedPortServer(name: "probe", registry: registry) { _ in nil }
      }
      switch result {
      case .success(let server): server.invalidate()
      case .failure(let error): if error.code == .nameInUse { spurious += 1 }
      }
    }
    stop.withLock { $0 = true }
    prober.wait()
    #expect(spurious == 0, "\(spurious) of 2000 registrations of a free name failed with nameInUse")
    // A name really held is still refused.
    let holder = try NamedPortServer(name: "probe", registry: registry) { _ in nil }
    #expect(throws: RunLoopError.nameInUse("")) {
      try NamedPortServer(name: "probe", registry: registry) { _ in nil }
    }
    holder.invalidate()
  }

  /// A directory that would leave no room for a longest name plus ".sock" in a socket
  /// address is refused up front, not at the first bind.
  @Test func registryDirectoryTooLongForALongestSocketPathIsRefused() throws {
    let temporary = try TemporaryRegistry()
    // 108-byte sun_path: "/" + 64-byte name + ".sock" + NUL leaves 37 bytes of directory.
    let fits =
      temporary.directory + "/"
      + String(repeating: "d", count: 37 - temporary.directory.utf8.count - 1)
    let tooLong = fits + "x"
    #expect(throws: RunLoopError.invalidArgument("")) {
      try PortNameRegistry(directory: tooLong)
    }
    rmdir(tooLong)
    let registry = try PortNameRegistry(directory: fits)
    let longest = String(repeating: "n", count: PortNameRegistry.maximumNameLength)
    let server = try NamedPortServer(name: longest, registry: registry) { message in message.data }
    #expect(server.isValid)
    server.invalidate()
    unlink(registry.directory + "/" + longest + ".lock")
    rmdir(fits)
  }

  /// invalidate() from another thread closes on the owner's next pass; a loop that runs
  /// only a custom mode must still close the server and stop answering.
  @Test func serverInvalidatedFromAnotherThreadStopsServingInACustomMode() throws {
    let temporary = try TemporaryRegistry()
    let server = try NamedPortServer(name: "custom", registry: temporary.registry) { m in m.data }
    let ready = DispatchSemaphore(value: 0)
    let thread = RunLoopThread(name: "custom-mode") { thread in
      try server.add(to: thread.runLoop, mode: "custom")
      ready.signal()
      while !thread.isCancelled {
        _ = try thread.runLoop.run(mode: "custom", timeout: .milliseconds(50))
      }
    }
    try thread.start()
    ready.wait()
    let port = try NamedPort(name: "custom", registry: temporary.registry)
    #expect(try port.request(msgid: 1, data: [1]) == [1])
    server.invalidate()
    #expect(eventually { server.connectionCount == 0 })
    #expect(throws: RunLoopError.self, "the invalidated server still answers") {
      try port.request(msgid: 1, data: [2], receiveTimeout: .milliseconds(300))
    }
    thread.cancel()
    try thread.join()
  }

  /// One NamedPort used by two threads: a call waiting behind another thread's long request
  /// gives up at its own timeout.
  @Test func callWaitingBehindAnotherThreadsCallKeepsItsOwnTimeout() throws {
    let temporary = try TemporaryRegistry()
    let slowStarted = DispatchSemaphore(value: 0)
    let server = try NamedPortServer(name: "slow", registry: temporary.registry) { message in
      if message.msgid == 1 {
        slowStarted.signal()
        usleep(4_000_000)
      }
      return []
    }
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    let port = try NamedPort(name: "slow", registry: temporary.registry)
    let slow = BackgroundJob { _ = try? port.request(msgid: 1, receiveTimeout: .seconds(10)) }
    // The other thread's request is now waiting for its reply.
    slowStarted.wait()
    let start = ContinuousClock.now
    #expect(throws: RunLoopError.timedOut("")) {
      try port.send(msgid: 2, timeout: .milliseconds(100))
    }
    let elapsed = ContinuousClock.now - start
    // Waiting behind the other call would take its 4 s; the margin is for a loaded machine.
    #expect(elapsed < .milliseconds(2500), "a send with a 100 ms timeout took \(elapsed)")
    slow.wait()
    // The port still works once the long call is done.
    try port.send(msgid: 2, timeout: .seconds(2))
    try finish(thread)
    server.invalidate()
  }

  /// Beyond maxConnections, a client is told why and disconnected; the count is kept.
  @Test func connectionsBeyondTheCapAreRefusedAndCounted() throws {
    let temporary = try TemporaryRegistry()
    let server = try NamedPortServer(
      name: "capped", registry: temporary.registry, maxConnections: 2
    ) { message in message.data }
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    let first = try NamedPort(name: "capped", registry: temporary.registry)
    let second = try NamedPort(name: "capped", registry: temporary.registry)
    #expect(try first.request(msgid: 1, data: [1]) == [1])
    #expect(try second.request(msgid: 1, data: [2]) == [2])
    let third = try NamedPort(name: "capped", registry: temporary.registry)
    #expect(throws: RunLoopError.tooManyConnections("")) {
      try third.request(msgid: 1, data: [3], receiveTimeout: .seconds(2))
    }
    #expect(server.statistics.connectionsRefusedAtCap == 1)
    #expect(server.connectionCount == 2)
    #expect(throws: RunLoopError.invalidArgument("")) {
      try NamedPortServer(name: "zero", registry: temporary.registry, maxConnections: 0) { _ in
        nil
      }
    }
    try finish(thread)
    server.invalidate()
  }

  /// accept() failing with EMFILE leaves the listener readable; the server must pause
  /// accepting instead of spinning, and accept the waiting client once descriptors are
  /// free again. In a helper process: the descriptor limit is process-wide.
  @Test func acceptFailingForLackOfDescriptorsPausesInsteadOfSpinning() throws {
    let temporary = try TemporaryRegistry()
    let helper = try HelperProcess(["ports-emfile", temporary.directory])
    let line = try #require(helper.readLine())
    #expect(helper.waitForExit() == 0)
    let fields = Dictionary(
      uniqueKeysWithValues: line.split(separator: " ").compactMap { field in
        let parts = field.split(separator: ":")
        return parts.count == 2 ? (String(parts[0]), Int(parts[1]) ?? -1) : nil
      })
    #expect(fields["connect"] == 0, "\(line)")
    #expect((fields["pauses"] ?? 0) >= 1, "accept never failed for lack of descriptors: \(line)")
    #expect((fields["cpu-ms"] ?? 1000) < 150, "the server spun while accept failed: \(line)")
    #expect(fields["accepted"] == 1, "the waiting client was never accepted: \(line)")
  }
}
