import Glibc
import RunLoopCore
import RunLoopPorts
import Testing

/// Log lines and received bytes of one side of a socket test.
private final class SocketLog: Sendable {
  let events = GuardedState<[String]>([])
  let bytes = GuardedState<[UInt8]>([])

  func note(_ event: String) { events.withLock { $0.append(event) } }
  var all: [String] { events.withLock { $0 } }
  var received: [UInt8] { bytes.withLock { $0 } }
}

/// An echo server: every accepted connection sends back what it reads.
private func echoListener(_ endpoint: SocketEndpoint, log: SocketLog) throws -> (
  SocketSource, RunLoopThread
) {
  let listener = GuardedState<SocketSource?>(nil)
  let thread = try startLoopThread("socket-server") { loop in
    let server = try SocketSource(listeningOn: endpoint) { _, descriptor in
      log.note("accept")
      let connection = SocketSource(
        connected: descriptor, ownership: .owned,
        onData: { socket, bytes in socket.write(bytes) },
        onClose: { _, error in log.note("server-close \(error == nil ? "eof" : "error")") })
      try? connection.add(to: loop, mode: .default)
    }
    try server.add(to: loop, mode: .default)
    listener.withLock { $0 = server }
  }
  return (listener.withLock { $0! }, thread)
}

@Suite("Socket sources")
struct SocketSourceTests {
  /// Over IPv4 and IPv6 loopback: the two address families take different paths.
  @Test(arguments: ["127.0.0.1", "::1"])
  func tcpConnectDataAndWriteCalloutsOverLoopback(host: String) throws {
    let serverLog = SocketLog()
    let clientLog = SocketLog()
    let (server, serverThread) = try echoListener(.tcp(host: host, port: 0), log: serverLog)
    let port = try #require(server.localPort)
    #expect(port != 0)
    let message = Array("hello, loop".utf8)
    try onNewThread("socket-client") { loop in
      let client = try SocketSource(
        connectingTo: .tcp(host: host, port: port),
        onConnect: { socket, error in
          clientLog.note(error == nil ? "connect" : "connect failed")
          socket.write(message)
        },
        onData: { _, bytes in clientLog.bytes.withLock { $0 += bytes } },
        onWritable: { _ in clientLog.note("drained") })
      try client.add(to: loop, mode: .default)
      try run(loop) { clientLog.received.count >= message.count }
      #expect(client.pendingOutput == 0)
      client.invalidate()
    }
    #expect(clientLog.received == message)
    #expect(clientLog.all == ["connect", "drained"])
    #expect(eventually { serverLog.all == ["accept", "server-close eof"] })
    try finish(serverThread)
    server.invalidate()
  }

  @Test func unixSocketPeerCloseDeliversDataThenClose() throws {
    let temporary = try TemporaryRegistry()
    let path = temporary.directory + "/greeter.sock"
    let clientLog = SocketLog()
    let serverThread = try startLoopThread("greeter") { loop in
      let server = try SocketSource(listeningOn: .unix(path: path)) { _, descriptor in
        // Greet and hang up at once.
        let greeting = Array("welcome".utf8)
        _ = greeting.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
        close(descriptor)
      }
      try server.add(to: loop, mode: .default)
    }
    try onNewThread("unix-client") { loop in
      let client = try SocketSource(
        connectingTo: .unix(path: path),
        onConnect: { _, error in clientLog.note(error == nil ? "connect" : "connect failed") },
        onData: { _, bytes in clientLog.bytes.withLock { $0 += bytes } },
        onClose: { _, error in clientLog.note(error == nil ? "close eof" : "close error") })
      try client.add(to: loop, mode: .default)
      try run(loop) { !client.isValid }
    }
    #expect(clientLog.received == Array("welcome".utf8))
    #expect(clientLog.all == ["connect", "close eof"])
    try finish(serverThread)
  }

  @Test func refusedConnectIsReportedToTheConnectCallout() throws {
    // Take a free port, then stop listening on it.
    let probe = try SocketSource(listeningOn: .tcp(host: "127.0.0.1", port: 0)) { _, _ in }
    let port = try #require(probe.localPort)
    probe.invalidate()
    let outcome = GuardedState<RunLoopError?>(nil)
    let called = GuardedState(0)
    try onNewThread { loop in
      let client = try SocketSource(
        connectingTo: .tcp(host: "127.0.0.1", port: port),
        onConnect: { _, error in
          called.withLock { $0 += 1 }
          outcome.withLock { $0 = error }
        })
      try client.add(to: loop, mode: .default)
      try run(loop) { called.withLock { $0 } > 0 }
      #expect(!client.isValid)
    }
    #expect(called.withLock { $0 } == 1)
    #expect(outcome.withLock { $0?.systemError } == ECONNREFUSED)
  }

  @Test func largeWriteIsSentCompletelyAcrossManyWritableCallouts() throws {
    let temporary = try TemporaryRegistry()
    let serverLog = SocketLog()
    let (server, serverThread) = try echoListener(
      .unix(path: temporary.directory + "/echo.sock"), log: serverLog)
    // Far more than a socket buffer holds, so it takes many writable call-outs.
    let payload = (0..<1_500_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
    let clientLog = SocketLog()
    try onNewThread("bulk-client") { loop in
      let client = try SocketSource(
        connectingTo: .unix(path: temporary.directory + "/echo.sock"),
        onConnect: { socket, _ in socket.write(payload) },
        onData: { _, bytes in clientLog.bytes.withLock { $0 += bytes } },
        onWritable: { _ in clientLog.note("drained") })
      try client.add(to: loop, mode: .default)
      try run(loop, seconds: 30) { clientLog.received.count >= payload.count }
      client.invalidate()
    }
    #expect(clientLog.received.count == payload.count)
    #expect(clientLog.received == payload)
    #expect(clientLog.all == ["drained"])
    try finish(serverThread)
    server.invalidate()
  }

  @Test func badAddressesAreClearErrors() {
    #expect(throws: RunLoopError.invalidArgument("")) {
      try SocketSource(listeningOn: .tcp(host: "localhost", port: 0)) { _, _ in }
    }
    #expect(throws: RunLoopError.invalidArgument("")) {
      try SocketSource(
        connectingTo: .unix(path: String(repeating: "p", count: 200)), onConnect: { _, _ in })
    }
  }
}

@Suite("Socket sources written from other threads")
struct SocketSourceCrossThreadWriteTests {
  /// Many small writes from another thread race the loop's flushes, which turn writability
  /// off whenever the queue is empty: every byte must still go out.
  @Test func writesFromAnotherThreadAreNeverLeftUnsent() throws {
    var fds: [Int32] = [0, 0]
    #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
    let peer = fds[1]
    let drained = GuardedState(0)
    let socket = SocketSource(
      connected: fds[0], ownership: .owned, onWritable: { _ in drained.withLock { $0 += 1 } })
    let thread = try startLoopThread("socket-loop") { loop in
      try socket.add(to: loop, mode: .default)
    }
    let chunks = 3000
    let writer = BackgroundJob {
      for index in 0..<chunks {
        socket.write([UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 16))
        if index % 8 == 0 { sched_yield() }
      }
    }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    let deadline = ContinuousClock.now + .seconds(10)
    while received.count < chunks * 16, ContinuousClock.now < deadline {
      var entry = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
      guard poll(&entry, 1, 50) > 0 else { continue }
      let count = read(peer, &buffer, buffer.count)
      if count > 0 { received += buffer[0..<count] }
    }
    writer.wait()
    #expect(received.count == chunks * 16, "\(socket.pendingOutput) bytes were left queued")
    let expected = (0..<chunks).flatMap {
      [UInt8](repeating: UInt8(truncatingIfNeeded: $0), count: 16)
    }
    #expect(received == expected)
    // The loop thread calls onWritable just after its last send, which the peer may have
    // read before the call-out ran.
    #expect(eventually { drained.withLock { $0 } >= 1 })
    try finish(thread)
    socket.invalidate()
    close(peer)
  }
}
