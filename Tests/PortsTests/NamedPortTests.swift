import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Testing

/// An echo server on its own loop thread in this process.
private func echoServer(
  _ registry: PortNameRegistry, name: String, mode: LoopMode = .default,
  maxMessageSize: Int = NamedPortServer.defaultMaxMessageSize
) throws -> (NamedPortServer, RunLoopThread) {
  let server = try NamedPortServer(
    name: name, registry: registry, maxMessageSize: maxMessageSize
  ) { message in message.data }
  let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: mode) }
  return (server, thread)
}

/// Connects a raw socket to `name`, writes `bytes`, and optionally closes the write side.
private func rawClient(_ registry: PortNameRegistry, name: String, bytes: [UInt8]) -> Int32 {
  let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
  var address = sockaddr_un()
  address.sun_family = sa_family_t(AF_UNIX)
  let path = Array(registry.socketPath(for: name).utf8) + [0]
  withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
  _ = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
    }
  }
  _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  return descriptor
}

/// A valid frame header for a request with `length` payload bytes.
private func header(kind: UInt8 = 2, version: UInt8 = 1, length: UInt32) -> [UInt8] {
  Array("RLMP".utf8) + [version, kind, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]
    + [
      UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF),
      UInt8(length & 0xFF),
    ]
}

@Suite("Named ports between processes")
struct NamedPortTests {
  @Test func requestReplyWithAServerInAnotherProcess() throws {
    let temporary = try TemporaryRegistry()
    let helper = try HelperProcess(["ports-echo", temporary.directory, "echo"])
    #expect(helper.readLine() == "ready fresh")
    let port = try NamedPort(name: "echo", registry: temporary.registry)
    try port.send(msgid: 1, data: [1, 2, 3])
    for text in ["one", "two", "three"] {
      let reply = try port.request(msgid: 1, data: Array(text.utf8))
      #expect(String(decoding: reply, as: UTF8.self) == text)
    }
    let big = [UInt8](repeating: 7, count: 300_000)
    #expect(try port.request(msgid: 1, data: big, receiveTimeout: .seconds(10)) == big)
    #expect(try port.request(msgid: 3) == Array("bye".utf8))
    #expect(helper.waitForExit() == 0)
  }

  @Test func clientInAnotherProcessIsServedOnTheLoopThread() throws {
    let temporary = try TemporaryRegistry()
    let seen = GuardedState<[NamedPortMessage]>([])
    let server = try NamedPortServer(name: "main", registry: temporary.registry) { message in
      seen.withLock { $0.append(message) }
      return Array("got \(message.data.count)".utf8)
    }
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    let helper = try HelperProcess(["ports-request", temporary.directory, "main", "5", "hello"])
    #expect(helper.readLine() == "reply:got 5")
    #expect(helper.waitForExit() == 0)
    let messages = seen.withLock { $0 }
    #expect(messages.count == 1)
    #expect(messages.first?.msgid == 5)
    #expect(messages.first?.peerPID == helper.pid)
    #expect(messages.first?.peerUID == getuid())
    #expect(messages.first?.expectsReply == true)
    try finish(thread)
    server.invalidate()
  }

  @Test func oneServerServesManyClientThreadsWithoutMixingReplies() throws {
    let temporary = try TemporaryRegistry()
    let (server, thread) = try echoServer(temporary.registry, name: "busy")
    let failures = GuardedState<[String]>([])
    let clients = (0..<4).map { client in
      RunLoopThread(name: "client-\(client)") { _ in
        let port = try NamedPort(name: "busy", registry: temporary.registry)
        for index in 0..<300 {
          let text = Array("\(client):\(index)".utf8)
          let reply = try port.request(msgid: Int32(index), data: text)
          if reply != text { failures.withLock { $0.append("\(client):\(index)") } }
        }
      }
    }
    for client in clients { try client.start() }
    for client in clients { try client.join() }
    #expect(failures.withLock { $0 }.isEmpty)
    #expect(server.statistics.messagesHandled == 1200)
    #expect(server.statistics.connectionsAccepted == 4)
    try finish(thread)
    server.invalidate()
  }

  @Test func nameInUseIsAClearErrorInAndAcrossProcesses() throws {
    let temporary = try TemporaryRegistry()
    let first = try NamedPortServer(name: "taken", registry: temporary.registry) { _ in nil }
    #expect(throws: RunLoopError.nameInUse("")) {
      try NamedPortServer(name: "taken", registry: temporary.registry) { _ in nil }
    }
    #expect(temporary.registry.isRegistered("taken"))
    first.invalidate()
    #expect(!temporary.registry.isRegistered("taken"))
    let helper = try HelperProcess(["ports-echo", temporary.directory, "held"])
    #expect(helper.readLine() == "ready fresh")
    #expect(throws: RunLoopError.nameInUse("")) {
      try NamedPortServer(name: "held", registry: temporary.registry) { _ in nil }
    }
    // The name is free again once its holder is gone.
    let second = try NamedPortServer(name: "taken", registry: temporary.registry) { _ in nil }
    second.invalidate()
  }

  @Test func staleSocketOfACrashedProcessIsDetectedAndReclaimed() throws {
    let temporary = try TemporaryRegistry()
    let helper = try HelperProcess(["ports-echo", temporary.directory, "phoenix"])
    #expect(helper.readLine() == "ready fresh")
    helper.signal(SIGKILL)
    #expect(helper.waitForExit() == 128 + SIGKILL)
    // The socket file is left behind, but nobody serves it.
    #expect(access(temporary.registry.socketPath(for: "phoenix"), F_OK) == 0)
    #expect(!temporary.registry.isRegistered("phoenix"))
    #expect(throws: RunLoopError.nameNotFound("")) {
      try NamedPort(name: "phoenix", registry: temporary.registry)
    }
    let (server, thread) = try echoServer(temporary.registry, name: "phoenix")
    #expect(server.reclaimedStaleSocket)
    let port = try NamedPort(name: "phoenix", registry: temporary.registry)
    #expect(try port.request(msgid: 1, data: [42]) == [42])
    try finish(thread)
    server.invalidate()
  }

  @Test func peerDeathMidRequestIsAnErrorBeforeTheTimeout() throws {
    let temporary = try TemporaryRegistry()
    let helper = try HelperProcess(["ports-echo", temporary.directory, "fragile"])
    #expect(helper.readLine() == "ready fresh")
    let port = try NamedPort(name: "fragile", registry: temporary.registry)
    let start = ContinuousClock.now
    #expect(throws: RunLoopError.peerClosed("")) {
      try port.request(msgid: 2, data: [], receiveTimeout: .seconds(20))
    }
    #expect(ContinuousClock.now - start < .seconds(20))
    #expect(helper.waitForExit() == 3)
    // The next call reconnects, and finds nobody.
    #expect(throws: RunLoopError.nameNotFound("")) { try port.request(msgid: 1) }
  }

  @Test func unansweredRequestTimesOut() throws {
    let temporary = try TemporaryRegistry()
    // Served in a mode its loop never runs: connections are accepted by the kernel's
    // backlog, but nothing answers.
    let (server, thread) = try echoServer(temporary.registry, name: "silent", mode: "never")
    let port = try NamedPort(name: "silent", registry: temporary.registry)
    let start = ContinuousClock.now
    #expect(throws: RunLoopError.timedOut("")) {
      try port.request(msgid: 1, data: [1], receiveTimeout: .milliseconds(100))
    }
    #expect(ContinuousClock.now - start >= .milliseconds(100))
    try finish(thread)
    server.invalidate()
  }

  @Test func sendToAServerThatDoesNotReadTimesOut() throws {
    let temporary = try TemporaryRegistry()
    let (server, thread) = try echoServer(temporary.registry, name: "deaf", mode: "never")
    let port = try NamedPort(name: "deaf", registry: temporary.registry)
    // Far more than the socket buffers hold; nobody reads on the other side.
    let start = ContinuousClock.now
    #expect(throws: RunLoopError.timedOut("")) {
      try port.send(
        msgid: 1, data: [UInt8](repeating: 1, count: 1 << 20), timeout: .milliseconds(100))
    }
    #expect(ContinuousClock.now - start >= .milliseconds(100))
    #expect(ContinuousClock.now - start < .seconds(10))
    try finish(thread)
    server.invalidate()
  }

  @Test func badFramesAreRejectedWhileOtherPeersAreStillServed() throws {
    let temporary = try TemporaryRegistry()
    let (server, thread) = try echoServer(
      temporary.registry, name: "sturdy", maxMessageSize: 1024)
    let good = try NamedPort(name: "sturdy", registry: temporary.registry)
    var random = SystemRandomNumberGenerator()
    let garbage = [0xFF] + (0..<200).map { _ in UInt8.random(in: 0...255, using: &random) }
    let attacks: [(String, [UInt8], Bool)] = [
      ("random bytes", garbage, false),
      ("bad version", header(version: 9, length: 0), false),
      ("unknown kind", header(kind: 77, length: 0), false),
      ("reply sent by a client", header(kind: 3, length: 0), false),
      ("oversized", header(length: 1_000_000), false),
      ("truncated", header(length: 100) + [1, 2, 3], true),
    ]
    for (index, (label, bytes, closeAfter)) in attacks.enumerated() {
      let descriptor = rawClient(temporary.registry, name: "sturdy", bytes: bytes)
      if closeAfter { shutdown(descriptor, Int32(SHUT_WR)) }
      #expect(
        eventually { server.statistics.framesRejected == index + 1 }, "\(label) not rejected")
      close(descriptor)
      // Everyone else is still served.
      #expect(try good.request(msgid: 1, data: Array(label.utf8)) == Array(label.utf8))
    }
    #expect(server.statistics.messagesHandled == attacks.count)
    #expect(eventually { server.connectionCount == 1 })
    try finish(thread)
    server.invalidate()
  }

  @Test func messagesAboveTheMaximumAreRefusedClearly() throws {
    let temporary = try TemporaryRegistry()
    let (server, thread) = try echoServer(temporary.registry, name: "small", maxMessageSize: 16)
    // Caught by the sender, before anything is written.
    let strict = try NamedPort(name: "small", registry: temporary.registry, maxMessageSize: 16)
    #expect(throws: RunLoopError.messageTooLarge("")) {
      try strict.request(msgid: 1, data: [UInt8](repeating: 0, count: 17))
    }
    #expect(try strict.request(msgid: 1, data: [1]) == [1])
    // Caught by the server, which says why.
    let lax = try NamedPort(name: "small", registry: temporary.registry)
    #expect(throws: RunLoopError.messageTooLarge("")) {
      try lax.request(msgid: 1, data: [UInt8](repeating: 0, count: 17))
    }
    #expect(try strict.request(msgid: 1, data: [2]) == [2])
    try finish(thread)
    server.invalidate()
  }

  @Test func foreignUserIsRefused() throws {
    guard getuid() == 0, access("/usr/bin/setpriv", X_OK) == 0 else {
      print("skipped: refusing a foreign uid needs root and setpriv to run a client as 65534")
      return
    }
    let temporary = try TemporaryRegistry()
    let server = try NamedPortServer(name: "private", registry: temporary.registry) { _ in
      Array("secret".utf8)
    }
    // Open the file-system doors on purpose, so that only SO_PEERCRED stands in the way.
    chmod(temporary.directory, 0o711)
    chmod(temporary.registry.socketPath(for: "private"), 0o666)
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    let helper = try HelperProcess(
      ["ports-request", temporary.directory, "private", "1", "let me in"], setprivUser: 65534)
    #expect(helper.readLine() == "error:peerRefused")
    #expect(helper.waitForExit() == 1)
    #expect(server.statistics.peersRefused == 1)
    #expect(server.statistics.messagesHandled == 0)
    try finish(thread)
    server.invalidate()
  }

  @Test func badNamesAndMissingPortsAreClearErrors() throws {
    let temporary = try TemporaryRegistry()
    for bad in ["", "a/b", ".hidden", String(repeating: "x", count: 65), "sp ace"] {
      #expect(throws: RunLoopError.invalidName("")) {
        try NamedPortServer(name: bad, registry: temporary.registry) { _ in nil }
      }
    }
    // A control byte is shown escaped: a NUL or an escape sequence printed raw would cut or
    // rewrite the message on a terminal.
    #expect {
      try NamedPortServer(name: "a\u{0}b\u{1B}[2J", registry: temporary.registry) { _ in nil }
    } throws: { error in
      let message = (error as? RunLoopError)?.message ?? ""
      return message.hasPrefix("port name 'a\\0b\\u{1B}[2J' must be")
        && !message.unicodeScalars.contains { $0.value < 0x20 }
    }
    #expect(throws: RunLoopError.nameNotFound("")) {
      try NamedPort(name: "nobody", registry: temporary.registry)
    }
    let standard = try PortNameRegistry.standard()
    var info = stat()
    #expect(stat(standard.directory, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o700)
    #expect(info.st_uid == getuid())
  }
}
