import Glibc
import RunLoopCore
import RunLoopPorts

extension Scenarios {
  static let sockets = Scenario(
    name: "sockets",
    title: "Socket sources: a listener, an accepted connection and a client on one loop",
    guide: "Run Loops > Port-Based Sources (CFSocket), Configuring a Port-Based Input Source",
    article: "PortBasedSources.md, Socket sources (the CFSocket role)"
  ) { narration in
    let loop = EventRunLoop.current
    let path = "/tmp/runloop-demo-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
    defer { unlink(path) }
    let order = GuardedState<[String]>([])
    @Sendable func note(_ text: String) {
      order.withLock { $0.append(text) }
      narration.event(text)
    }
    let accepted = GuardedState<[SocketSource]>([])
    // The server side: every accepted connection becomes a source of its own that answers
    // each read in upper case.
    let listener = try SocketSource(listeningOn: .unix(path: path)) { _, descriptor in
      note("listener: accepted a connection")
      let connection = SocketSource(
        connected: descriptor, name: "server-side",
        onData: { connection, bytes in
          note("server: read '\(String(decoding: bytes, as: UTF8.self))'")
          connection.write(Array(String(decoding: bytes, as: UTF8.self).uppercased().utf8))
        },
        onClose: { _, _ in note("server: the client closed its end") })
      try? connection.add(to: loop, mode: .default)
      accepted.withLock { $0.append(connection) }
    }
    try listener.add(to: loop, mode: .default)
    let replies = GuardedState<[String]>([])
    let client = try SocketSource(
      connectingTo: .unix(path: path), name: "client",
      onConnect: { socket, error in
        note("client: connected\(error.map { " with \($0)" } ?? ""); writing 'ping'")
        socket.write(Array("ping".utf8))
      },
      onData: { _, bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        replies.withLock { $0.append(text) }
        note("client: read '\(text)'")
      })
    try client.add(to: loop, mode: .default)
    narration.say("A Unix-socket listener and a client on the main loop; every descriptor that")
    narration.say("becomes readable or writable wakes the loop, and its call-out runs in step 9.")
    let deadline = ContinuousClock.now + .seconds(2)
    while replies.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline {
      _ = try loop.run(mode: .default, timeout: .milliseconds(50), returnAfterSourceHandled: true)
    }
    client.invalidate()
    while !order.withLock({ $0.contains("server: the client closed its end") })
      && ContinuousClock.now < deadline
    {
      _ = try loop.run(mode: .default, timeout: .milliseconds(50), returnAfterSourceHandled: true)
    }
    let seen = order.withLock { $0 }
    narration.expect(replies.withLock { $0 } == ["PING"], "the client got 'PING' back")
    let index = { (text: String) in seen.firstIndex(of: text) ?? Int.max }
    narration.expect(
      index("listener: accepted a connection") < index("server: read 'ping'")
        && index("server: read 'ping'") < index("client: read 'PING'"),
      "accept, then the server's read, then the client's read, each a call-out of its source")
    narration.expect(
      seen.contains("server: the client closed its end"),
      "invalidating the client closed the socket; the server side saw end of file")
    for connection in accepted.withLock({ $0 }) { connection.invalidate() }
    listener.invalidate()
  }
}
