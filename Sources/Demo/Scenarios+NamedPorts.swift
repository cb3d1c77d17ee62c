import Foundation
import RunLoopCore
import RunLoopPorts

extension Scenarios {
  /// Set in the child process of `named-ports`: the server's name, and the registry folder.
  static let namedPortClientVariable = "RUNLOOP_DEMO_NAMED_PORT"
  static let namedPortDirectoryVariable = "RUNLOOP_DEMO_NAMED_PORT_DIRECTORY"

  /// The JSON log of `runloop-demo scenario --json-log PATH`, so the named-ports scenario can
  /// give its client process a log of its own next to it.
  static let jsonLogPath = GuardedState<String?>(nil)

  /// Where the client process of `named-ports` traces, next to the server's log `path`:
  /// `ports.jsonl` gives `ports.client.jsonl`.
  static func clientLogPath(besides path: String) -> String {
    path.hasSuffix(".jsonl") ? String(path.dropLast(6)) + ".client.jsonl" : path + ".client"
  }

  /// The child's side: look the name up, then, in one call-out of this thread's loop (a
  /// perform block named `send`), send one message and make one request; claims that the
  /// reply is the request in upper case, so the child exits 0 only then. Traced (the child
  /// runs with `--json-log`), both frames carry that call-out's span, so the two logs
  /// exported together show the request crossing to the server and the reply coming back.
  static func namedPortClient(name: String, directory: String, narration: Narration) throws {
    let registry = try PortNameRegistry(directory: directory)
    let port = try NamedPort(name: name, registry: registry)
    let loop = EventRunLoop.current
    let outcome = GuardedState<Result<[UInt8], RunLoopError>?>(nil)
    loop.perform(name: "send") {
      do throws(RunLoopError) {
        try port.send(msgid: 1, data: Array("hello from pid \(getpid())".utf8))
        let reply = try port.request(
          msgid: 2, data: Array("ping".utf8), sendTimeout: .seconds(1),
          receiveTimeout: .seconds(2))
        outcome.withLock { $0 = .success(reply) }
      } catch {
        outcome.withLock { $0 = .failure(error) }
      }
      loop.stop()
    }
    _ = try loop.run(mode: .default, timeout: .seconds(5))
    port.invalidate()
    let result = outcome.withLock { $0 }
    if case .failure(let error) = result {
      FileHandle.standardError.write(Data("named-port client: \(error)\n".utf8))
    }
    narration.expect(
      (try? result?.get()) == Array("PING".utf8), "the server answered 'PING' to 'ping'")
  }

  static let namedPorts = Scenario(
    name: "named-ports",
    title: "Named ports between processes: a server on this loop, a client in another process",
    guide: "Run Loops > Configuring an NSMessagePort Object (Listing 3-16), Listings 3-17 to 3-19",
    article: "PortBasedSources.md, Named ports between processes (the CFMessagePort role)"
  ) { narration in
    let environment = ProcessInfo.processInfo.environment
    if let name = environment[namedPortClientVariable],
      let directory = environment[namedPortDirectoryVariable]
    {
      try namedPortClient(name: name, directory: directory, narration: narration)
      return
    }
    let loop = EventRunLoop.current
    let directory = NSTemporaryDirectory() + "runloop-demo-ports-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let registry = try PortNameRegistry(directory: directory)
    let messages = GuardedState<[(msgid: Int32, pid: pid_t, text: String)]>([])
    // Listing 3-16's registration: the name is what another process looks up.
    let server = try NamedPortServer(name: "demo.main", registry: registry) { message in
      let text = String(decoding: message.data, as: UTF8.self)
      messages.withLock { $0.append((message.msgid, message.peerPID, text)) }
      narration.event(
        "message \(message.msgid) from pid \(message.peerPID): '\(text)'"
          + (message.expectsReply ? "; replying '\(text.uppercased())'" : ""))
      return message.expectsReply ? Array(text.uppercased().utf8) : nil
    }
    try server.add(to: loop, mode: .default)
    narration.say("This process serves 'demo.main'; a second runloop-demo process looks the name")
    narration.say("up, sends a one-way message, then a request, and exits 0 if the reply is right.")
    let child = childProcess(
      scenario: "named-ports",
      environment: [namedPortClientVariable: "demo.main", namedPortDirectoryVariable: directory])
    if let serverLog = jsonLogPath.withLock({ $0 }) {
      let clientLog = clientLogPath(besides: serverLog)
      child.arguments! += ["--json-log", clientLog]
      narration.say("The client traces to \(clientLog); draw both logs as one picture with")
      narration.say(
        "  runloop-demo trace export \(serverLog) \(clientLog) -o named-ports.trace.json")
    }
    child.standardOutput = FileHandle.nullDevice
    try child.run()
    let childPID = child.processIdentifier
    narration.event("started the client, pid \(childPID)", at: .outside)
    let deadline = ContinuousClock.now + .seconds(5)
    while child.isRunning && ContinuousClock.now < deadline {
      _ = try loop.run(mode: .default, timeout: .milliseconds(20))
    }
    if child.isRunning { child.terminate() }
    child.waitUntilExit()
    server.invalidate()
    let got = messages.withLock { $0 }
    narration.expect(
      got.map(\.msgid) == [1, 2] && got.allSatisfy { $0.pid == childPID },
      "a message and a request arrived, both from pid \(childPID) (SO_PEERCRED)")
    narration.expect(
      got.first?.text == "hello from pid \(childPID)", "the one-way message came as sent")
    narration.expect(
      child.terminationStatus == 0,
      "the client got 'PING' back and exited \(child.terminationStatus)")
  }
}
