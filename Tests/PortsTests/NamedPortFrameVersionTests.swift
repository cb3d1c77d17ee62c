import Glibc
import RunLoopCore
import RunLoopPorts
import Testing

/// Frame versions: a version-2 frame carries the sender's trace context; a server reads
/// versions 1 and 2 and answers in the version it was asked in; a version-1 peer refuses a
/// version-2 frame clearly.
@Suite("Named-port frame versions")
struct NamedPortFrameVersionTests {
  @Test func versionOneRequestIsAnsweredInVersionOne() throws {
    let temporary = try TemporaryRegistry()
    let (server, thread) = try Self.echoServer(temporary.registry, name: "v1-client")
    let client = try RawClient.connect(temporary.registry.socketPath(for: "v1-client"))
    defer { close(client) }
    RawClient.send(client, RawClient.header(kind: 2, length: 3) + [1, 2, 3])
    let reply = FrameBytes.read(client, count: 23)
    #expect(reply.count == 23)
    #expect(Array(reply.prefix(4)) == Array("RLMP".utf8))
    #expect(reply[4] == 1, "a version-1 request gets a version-1 reply")
    #expect(reply[5] == 3)
    #expect(Array(reply.suffix(3)) == [1, 2, 3])
    #expect(server.statistics.framesRejected == 0)
    try finish(thread)
    server.invalidate()
  }

  @Test func versionTwoRequestIsAnsweredInVersionTwoWithItsPayloadAfterTheTraceContext() throws {
    let temporary = try TemporaryRegistry()
    let (server, thread) = try Self.echoServer(temporary.registry, name: "v2-client")
    let client = try RawClient.connect(temporary.registry.socketPath(for: "v2-client"))
    defer { close(client) }
    RawClient.send(
      client,
      FrameBytes.tracedHeader(
        kind: 2, length: 2, traceID: FrameBytes.w3cTraceID,
        spanID: 0x00f0_67aa_0ba9_02b7) + [9, 8])
    let reply = FrameBytes.read(client, count: 50)
    #expect(reply.count == 50)
    #expect(reply[4] == 2, "a version-2 request gets a version-2 reply")
    #expect(reply[5] == 3)
    #expect(reply[20] == 0, "trace-context version 0")
    #expect(Array(reply.suffix(2)) == [9, 8])
    #expect(server.statistics.messagesHandled == 1)
    try finish(thread)
    server.invalidate()
  }

  @Test func versionOneServerRefusesAVersionTwoFrameAsAVersionOneServerDoes() throws {
    let temporary = try TemporaryRegistry()
    let (server, thread) = try Self.echoServer(
      temporary.registry, name: "old", maxFrameVersion: 1)
    let client = try RawClient.connect(temporary.registry.socketPath(for: "old"))
    defer { close(client) }
    RawClient.send(
      client,
      FrameBytes.tracedHeader(
        kind: 2, length: 1, traceID: FrameBytes.w3cTraceID,
        spanID: 7) + [1])
    // A version-1 failure frame, then the end of the connection: no hang.
    let answer = FrameBytes.readToEnd(client)
    #expect(answer.count > 20)
    #expect(answer[4] == 1)
    #expect(answer[5] == 4)
    #expect(
      String(decoding: answer.dropFirst(20), as: UTF8.self)
        == "malformedFrame: unsupported version 2")
    #expect(eventually { server.statistics.framesRejected == 1 })
    #expect(server.statistics.messagesHandled == 0)
    // It still serves version-1 clients.
    let legacy = try NamedPort(name: "old", registry: temporary.registry, frameVersion: 1)
    #expect(try legacy.request(msgid: 1, data: [5]) == [5])
    try finish(thread)
    server.invalidate()
  }

  @Test func frameNewerThanTheServerReadsIsRefusedWithUnsupportedFrameVersion() throws {
    let temporary = try TemporaryRegistry()
    let (server, thread) = try Self.echoServer(temporary.registry, name: "current")
    let client = try RawClient.connect(temporary.registry.socketPath(for: "current"))
    defer { close(client) }
    var future = RawClient.header(kind: 2, length: 0)
    future[4] = 3
    RawClient.send(client, future)
    let answer = FrameBytes.readToEnd(client)
    #expect(answer.count > 20)
    #expect(
      String(decoding: answer.dropFirst(20), as: UTF8.self)
        == "unsupportedFrameVersion: port 'current' reads frame versions 1 to 2, not 3")
    #expect(eventually { server.statistics.framesRejected == 1 })
    try finish(thread)
    server.invalidate()
  }

  @Test func clientOfVersionTwoGetsUnsupportedFrameVersionFromAVersionOneServerProcess() throws {
    let temporary = try TemporaryRegistry()
    let helper = try HelperProcess(["ports-echo", temporary.directory, "old", "1"])
    #expect(helper.readLine() == "ready fresh")
    let port = try NamedPort(name: "old", registry: temporary.registry)
    let error = #expect(throws: RunLoopError.self) {
      try port.request(msgid: 1, data: [1], receiveTimeout: .seconds(5))
    }
    #expect(error?.code == .unsupportedFrameVersion)
    #expect(error?.message.contains("malformedFrame: unsupported version 2") == true)
    #expect(error?.message.contains("frameVersion: 1") == true)
    // A one-way message returns before the refusal comes: it is lost, and the next call
    // says why.
    let oneWay = try NamedPort(name: "old", registry: temporary.registry)
    try oneWay.send(msgid: 1, data: [1])
    let next = #expect(throws: RunLoopError.self) { try oneWay.request(msgid: 1, data: [2]) }
    #expect(next?.code == .unsupportedFrameVersion)
    // The same server, asked in version 1, answers.
    let legacy = try NamedPort(name: "old", registry: temporary.registry, frameVersion: 1)
    #expect(try legacy.request(msgid: 1, data: Array("hi".utf8)) == Array("hi".utf8))
    #expect(try legacy.request(msgid: 3) == Array("bye".utf8))
    #expect(helper.waitForExit() == 0)
  }

  @Test func clientOfVersionOneInAnotherProcessIsServedByAVersionTwoServer() throws {
    let temporary = try TemporaryRegistry()
    let (server, thread) = try Self.echoServer(temporary.registry, name: "new")
    let helper = try HelperProcess(["ports-request", temporary.directory, "new", "1", "old", "1"])
    #expect(helper.readLine() == "reply:old")
    #expect(helper.waitForExit() == 0)
    #expect(server.statistics.framesRejected == 0)
    try finish(thread)
    server.invalidate()
  }

  @Test func unknownFrameVersionsAreRefusedAtCreation() throws {
    let temporary = try TemporaryRegistry()
    #expect(throws: RunLoopError.invalidArgument("")) {
      try NamedPortServer(name: "x", registry: temporary.registry, maxFrameVersion: 3) { _ in nil }
    }
    #expect(throws: RunLoopError.invalidArgument("")) {
      try NamedPortServer(name: "x", registry: temporary.registry, maxFrameVersion: 0) { _ in nil }
    }
    let (server, thread) = try Self.echoServer(temporary.registry, name: "x")
    #expect(throws: RunLoopError.invalidArgument("")) {
      try NamedPort(name: "x", registry: temporary.registry, frameVersion: 3)
    }
    try finish(thread)
    server.invalidate()
  }

  static func echoServer(
    _ registry: PortNameRegistry, name: String,
    maxFrameVersion: Int = NamedPortServer.currentFrameVersion
  ) throws -> (NamedPortServer, RunLoopThread) {
    let server = try NamedPortServer(
      name: name, registry: registry, maxFrameVersion: maxFrameVersion
    ) { message in message.data }
    let thread = try startLoopThread("server") { loop in
      try server.add(to: loop, mode: .default)
    }
    return (server, thread)
  }
}

/// Version-2 frames by hand, and reading what a server sends back.
enum FrameBytes {
  /// The W3C specification's example trace id.
  static let w3cTraceID: (UInt64, UInt64) = (0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736)

  /// A version-2 header (message id 1, request id 1) with a trace context.
  static func tracedHeader(
    kind: UInt8, length: UInt32, traceID: (UInt64, UInt64), spanID: UInt64
  ) -> [UInt8] {
    var bytes = RawClient.header(kind: kind, length: length)
    bytes[4] = 2
    bytes.append(0)
    for value in [traceID.0, traceID.1, spanID] {
      for shift in stride(from: 56, through: 0, by: -8) {
        bytes.append(UInt8(value >> shift & 0xFF))
      }
    }
    bytes += [1, 0, 0]
    return bytes
  }

  /// Reads until `count` bytes came, the peer closed, or 5 s passed.
  static func read(_ descriptor: Int32, count: Int) -> [UInt8] {
    var received: [UInt8] = []
    let deadline = ContinuousClock.now + .seconds(5)
    while received.count < count && ContinuousClock.now < deadline {
      var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      guard poll(&entry, 1, 100) >= 0 else { break }
      guard entry.revents != 0 else { continue }
      var chunk = [UInt8](repeating: 0, count: 4096)
      let got = recv(descriptor, &chunk, chunk.count, 0)
      guard got > 0 else { break }
      received += chunk[0..<got]
    }
    return received
  }

  /// Reads until the peer closes (or 5 s pass).
  static func readToEnd(_ descriptor: Int32) -> [UInt8] { read(descriptor, count: .max) }
}
