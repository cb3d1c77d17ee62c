import Glibc
import RunLoopCore
import RunLoopPorts
import Testing

@Suite("Named port servers' deadlines and memory bound", .serialized)
struct NamedPortServerLimitsTests {
  /// More stalled clients than the server has slots, half silent and half stopped in the
  /// middle of a frame: while they stall a well-behaved client is turned away, and once their
  /// idle and frame deadlines pass each is told why and dropped, and it is served.
  @Test func stalledClientsGiveTheirSlotsBackOnceTheirDeadlinesPass() throws {
    let temporary = try TemporaryRegistry()
    let cap = 64
    let server = try NamedPortServer(
      name: "stalled", registry: temporary.registry, maxConnections: cap,
      idleTimeout: .seconds(2), frameTimeout: .seconds(2)
    ) { message in message.data }
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    let path = temporary.registry.socketPath(for: "stalled")
    // Even-numbered clients send nothing; odd ones send a header announcing 1000 bytes and
    // then 2 of them.
    var clients: [Int32] = []
    for index in 0..<(cap + cap / 2) {
      let client = try RawClient.connect(path)
      if index % 2 == 1 {
        RawClient.send(client, RawClient.header(kind: 2, length: 1000) + [1, 2])
      }
      clients.append(client)
    }
    defer { for client in clients { close(client) } }
    #expect(eventually { server.statistics.connectionsRefusedAtCap == cap / 2 })
    #expect(server.connectionCount == cap)
    let early = try NamedPort(name: "stalled", registry: temporary.registry)
    #expect(throws: RunLoopError.tooManyConnections(""), "a free slot while all stall") {
      try early.request(msgid: 1, data: [1], receiveTimeout: .seconds(2))
    }
    #expect(eventually { server.connectionCount == 0 }, "stalled clients still hold slots")
    let late = try NamedPort(name: "stalled", registry: temporary.registry)
    #expect(try late.request(msgid: 1, data: [7]) == [7])
    let statistics = server.statistics
    #expect(statistics.connectionsClosedIdle == cap / 2)
    #expect(statistics.framesTimedOut == cap / 2)
    #expect(statistics.connectionsRefusedAtCap == cap / 2 + 1)
    #expect(statistics.bufferedBytes == 0)
    // Each stalled client was told why it was dropped.
    var notices: [String: Int] = [:]
    for client in clients { notices[RawClient.failureCode(client) ?? "none", default: 0] += 1 }
    #expect(notices == ["idleClosed": cap / 2, "timedOut": cap / 2, "tooManyConnections": cap / 2])
    try finish(thread)
    server.invalidate()
  }

  /// Clients that each send most of a large frame and stop: the server holds no more than
  /// its byte cap (plus one read) for all of them, drops those that would take it further
  /// with `bufferFull`, and gives everything back when the rest go away.
  @Test func bytesOfUnfinishedFramesStayWithinTheServersCap() throws {
    let temporary = try TemporaryRegistry()
    let cap = 1 << 20
    let payload = 200 * 1024
    let server = try NamedPortServer(
      name: "hoard", registry: temporary.registry, maxMessageSize: 256 * 1024,
      frameTimeout: .seconds(60), maxBufferedBytes: cap
    ) { message in message.data }
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    let path = temporary.registry.socketPath(for: "hoard")
    // Each announces 256 KiB and sends a header and 200 KiB of it.
    let partial =
      RawClient.header(kind: 1, length: 256 * 1024) + [UInt8](repeating: 7, count: payload)
    let perClient = partial.count
    var clients: [Int32] = []
    defer { for client in clients { close(client) } }
    var mostHeld = 0
    for _ in 0..<16 {
      let client = try RawClient.connect(path)
      clients.append(client)
      RawClient.send(client, partial)
      // Wait until the server read all of it or dropped the client.
      let settled = eventually {
        let statistics = server.statistics
        mostHeld = max(mostHeld, statistics.bufferedBytes)
        return statistics.bufferedBytes % perClient == 0
          && statistics.bufferedBytes / perClient + statistics.connectionsDroppedAtBufferLimit
            == clients.count
      }
      #expect(settled, "the server neither kept nor dropped client \(clients.count)")
    }
    let statistics = server.statistics
    let kept = statistics.bufferedBytes / perClient
    #expect(kept == cap / perClient, "\(kept) unfinished frames kept under a \(cap)-byte cap")
    #expect(statistics.connectionsDroppedAtBufferLimit == 16 - kept)
    #expect(mostHeld <= cap + 65536, "held \(mostHeld) bytes with a cap of \(cap)")
    var notices: [String: Int] = [:]
    for client in clients.suffix(16 - kept) {
      notices[RawClient.failureCode(client) ?? "none", default: 0] += 1
    }
    #expect(notices == ["bufferFull": 16 - kept])
    // The kept ones hang up mid-frame: rejected as truncated, their bytes given back.
    for client in clients.prefix(kept) { shutdown(client, Int32(SHUT_WR)) }
    #expect(eventually { server.statistics.framesRejected == kept })
    #expect(server.statistics.bufferedBytes == 0)
    let port = try NamedPort(
      name: "hoard", registry: temporary.registry, maxMessageSize: 256 * 1024)
    let large = [UInt8](repeating: 3, count: 256 * 1024)
    #expect(try port.request(msgid: 1, data: large) == large)
    try finish(thread)
    server.invalidate()
  }

  /// A client that sends requests and never reads the replies is dropped once more than
  /// four largest replies wait for it, and the drop is counted: its replies are lost.
  @Test func clientThatNeverReadsRepliesIsDroppedAndCounted() throws {
    let temporary = try TemporaryRegistry()
    let reply = [UInt8](repeating: 5, count: 64 * 1024)
    let server = try NamedPortServer(
      name: "deaf", registry: temporary.registry, maxMessageSize: 64 * 1024
    ) { _ in reply }
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    let client = try RawClient.connect(temporary.registry.socketPath(for: "deaf"))
    defer { close(client) }
    // 100 replies of 64 KiB: far more than the socket buffers and the per-connection limit.
    for requestID in 1...100 {
      RawClient.send(client, RawClient.header(kind: 2, length: 0, requestID: UInt32(requestID)))
    }
    #expect(eventually { server.statistics.connectionsDroppedForUnreadReplies == 1 })
    #expect(eventually { server.connectionCount == 0 })
    try finish(thread)
    server.invalidate()
  }

  /// A NamedPort whose connection the server closed as idle connects again at its next
  /// call, a request or a one-way send, without an error.
  @Test func clientWhoseIdleConnectionWasClosedConnectsAgainWithoutAnError() throws {
    let temporary = try TemporaryRegistry()
    let seen = GuardedState<[Int32]>([])
    let server = try NamedPortServer(
      name: "idle", registry: temporary.registry, idleTimeout: .milliseconds(200)
    ) { message in
      seen.withLock { $0.append(message.msgid) }
      return message.data
    }
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    let port = try NamedPort(name: "idle", registry: temporary.registry)
    #expect(try port.request(msgid: 1, data: [1]) == [1])
    #expect(eventually { server.statistics.connectionsClosedIdle == 1 })
    #expect(try port.request(msgid: 2, data: [2]) == [2])
    #expect(eventually { server.statistics.connectionsClosedIdle == 2 })
    try port.send(msgid: 3)
    #expect(eventually { seen.withLock { $0 } == [1, 2, 3] })
    #expect(server.statistics.connectionsAccepted == 3)
    try finish(thread)
    server.invalidate()
  }

  /// The server's notices (idle close, refusals) are failure frames longer than a small
  /// `maxMessageSize`: a client must read them all the same, or it cannot tell an idle close
  /// from a dead server and fails with `peerClosed` instead of connecting again. (Under a
  /// loaded full-suite run, a client task that started more than 30 s after its port
  /// connected lost its request this way, and the consumer waited for it for ever.)
  @Test func clientWithASmallMaximumSizeWhoseIdleConnectionWasClosedConnectsAgain() throws {
    let temporary = try TemporaryRegistry()
    let server = try NamedPortServer(
      name: "idle-small", registry: temporary.registry, maxMessageSize: 16,
      idleTimeout: .milliseconds(200)
    ) { message in message.data }
    let thread = try startLoopThread("server") { loop in try server.add(to: loop, mode: .default) }
    let port = try NamedPort(name: "idle-small", registry: temporary.registry, maxMessageSize: 16)
    #expect(eventually { server.statistics.connectionsClosedIdle == 1 })
    #expect(try port.request(msgid: 1, data: [1]) == [1])
    #expect(eventually { server.statistics.connectionsClosedIdle == 2 })
    try port.send(msgid: 2, data: [2])
    #expect(server.statistics.connectionsAccepted >= 2)
    try finish(thread)
    server.invalidate()
  }

  /// Deadlines and the byte cap are checked when the server is made.
  @Test func deadlinesAndByteCapAreValidated() throws {
    let temporary = try TemporaryRegistry()
    #expect(throws: RunLoopError.invalidArgument("")) {
      try NamedPortServer(name: "v", registry: temporary.registry, idleTimeout: .zero) { _ in nil }
    }
    #expect(throws: RunLoopError.invalidArgument("")) {
      try NamedPortServer(name: "v", registry: temporary.registry, frameTimeout: .seconds(-1)) {
        _ in nil
      }
    }
    #expect(throws: RunLoopError.invalidArgument("")) {
      try NamedPortServer(
        name: "v", registry: temporary.registry, maxMessageSize: 4096, maxBufferedBytes: 4096
      ) { _ in nil }
    }
    let big = try NamedPortServer(
      name: "v", registry: temporary.registry, maxMessageSize: 128 << 20
    ) { _ in nil }
    // One largest frame: a version-2 header and the payload.
    #expect(big.maxBufferedBytes == (128 << 20) + 48)
    big.invalidate()
  }
}

/// A client speaking the frame format by hand over a plain socket, to stall on purpose.
enum RawClient {
  static func connect(_ path: String) throws -> Int32 {
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8) + [0]
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    let status = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard status == 0 else {
      let code = errno
      close(descriptor)
      throw RunLoopError.systemCall("connect(\(path))", errno: code)
    }
    return descriptor
  }

  /// A frame header (version 1, message id 1, request id 1).
  static func header(kind: UInt8, length: UInt32, requestID: UInt32 = 1) -> [UInt8] {
    func bigEndian(_ value: UInt32) -> [UInt8] {
      [
        UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF),
        UInt8(value & 0xFF),
      ]
    }
    return Array("RLMP".utf8) + [1, kind, 0, 0] + bigEndian(1) + bigEndian(requestID)
      + bigEndian(length)
  }

  /// Sends all of `bytes`, or as much as the peer takes before closing.
  static func send(_ descriptor: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
      let sent = bytes.withUnsafeBytes {
        Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
      }
      if sent <= 0 { return }
      offset += sent
    }
  }

  /// The code of the first failure frame the server sent, if it sent one within 5 s.
  static func failureCode(_ descriptor: Int32) -> String? {
    var received: [UInt8] = []
    let deadline = ContinuousClock.now + .seconds(5)
    while ContinuousClock.now < deadline {
      var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      guard poll(&entry, 1, 100) >= 0 else { return nil }
      guard entry.revents != 0 else { continue }
      var chunk = [UInt8](repeating: 0, count: 4096)
      let count = recv(descriptor, &chunk, chunk.count, 0)
      guard count > 0 else { break }
      received += chunk[0..<count]
    }
    guard received.count > 20, received[5] == 4 else { return nil }
    let text = String(decoding: received[20...], as: UTF8.self)
    return text.split(separator: ":", maxSplits: 1).first.map(String.init)
  }
}
