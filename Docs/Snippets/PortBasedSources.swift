import Glibc
import RunLoopCore
import RunLoopPorts

// The code of PortBasedSources.md.

package func portsDescriptorExample() throws {
  // snippet: ports-descriptor
  var ends: [Int32] = [0, 0]
  pipe(&ends)
  let reader = DescriptorSource(
    fileDescriptor: ends[0], ownership: .owned, name: "pipe",
    onReadable: { source in
      var buffer = [UInt8](repeating: 0, count: 512)
      let count = read(source.fileDescriptor, &buffer, buffer.count)
      if count == 0 { source.invalidate() }  // the writer closed its end
    },
    onError: { source, events in
      print("pipe reported \(events)")
      source.invalidate()
    })
  try reader.add(to: .current, mode: .default)
  // end snippet
}

package func portsSignalsExample() throws {
  // snippet: ports-signals
  // Anywhere, on any thread, with any other threads running: nothing to block first.
  let signals = try SignalSource(signals: [SIGTERM, SIGINT, SIGHUP]) { received in
    if received.signal == SIGHUP {
      print("reload requested by pid \(received.senderPID)")
    } else {
      EventRunLoop.main.stop()
    }
  }
  try signals.add(to: .main, mode: .common)
  try EventRunLoop.main.run()
  // end snippet
}

package func portsInProcessExample() throws {
  // snippet: ports-in-process
  let port = try InProcessPort(name: "jobs", capacity: 256) { message in
    print("job \(message.msgid) with \(message.components.count) components")
  }
  try port.add(to: .current, mode: .default)

  // From any thread:
  try port.send(
    LoopPortMessage(msgid: 7, components: [Array("payload".utf8)]),
    before: .now + .seconds(1))
  // end snippet
}

package func portsCheckInThreadsExample() throws {
  // snippet: ports-check-in-threads
  let checkInMessage: PortMessageID = 100

  // Listings 3-12 and 3-13: the main thread's port and its handler.
  let workerPort = GuardedState<InProcessPort?>(nil)
  let mainPort = try InProcessPort(name: "main") { message in
    if message.msgid == checkInMessage {
      // The worker's port arrives as the message's send port.
      workerPort.withLock { $0 = message.sendPort }
    }
  }
  try mainPort.add(to: .current, mode: .default)

  // Listing 3-14: the worker thread; Listing 3-15: its check-in.
  let worker = RunLoopThread(name: "worker", detached: true) { _ in
    let shouldExit = GuardedState(false)
    let myPort = try InProcessPort(name: "worker") { message in
      // Handle requests from the main thread; answer through message.sendPort.
    }
    myPort.onInvalidation { _ in shouldExit.withLock { $0 = true } }
    try myPort.add(to: .current, mode: .default)
    try LoopPortMessage(msgid: checkInMessage, sendPort: mainPort, receivePort: myPort)
      .send(before: .now)
    repeat {
      _ = try EventRunLoop.current.run(mode: .default, timeout: .seconds(1))
    } while !shouldExit.withLock { $0 }
  }
  try worker.start()
  // end snippet
}

package func portsNamedExample() throws {
  // snippet: ports-named
  // The server process:
  let server = try NamedPortServer(name: "com.example.main") { message in
    message.expectsReply ? Array("pong".utf8) : nil
  }
  try server.add(to: .main, mode: .default)
  try EventRunLoop.main.run()

  // Any process of the same user:
  let main = try NamedPort(name: "com.example.main")
  try main.send(msgid: 1, data: Array("hello".utf8))
  let reply = try main.request(
    msgid: 2, data: [], sendTimeout: .seconds(1), receiveTimeout: .seconds(2))
  print(String(decoding: reply, as: UTF8.self))  // "pong"
  // end snippet
}

package func portsRegistryExample() throws {
  // snippet: ports-registry
  // The server, as uid 1000, in a directory uid 1001 can reach:
  let registry = try PortNameRegistry(directory: "/srv/svc/ports")
  let server = try NamedPortServer(
    name: "svc", registry: registry, allowedUIDs: [getuid(), 1001]
  ) { _ in nil }

  // The client, as uid 1001, trusting the server's uid:
  let port = try NamedPort(name: "svc", registry: registry, trustedUIDs: [1000])
  try server.add(to: .main, mode: .default)  // in the server process
  try port.send(msgid: 1, data: [])  // in the client process
  // end snippet
}

package func portsCheckInProcessesExample() throws {
  // snippet: ports-check-in-processes
  let checkInMessage: PortMessageID = 100

  // Main process, Listings 3-17 and 3-18.
  let workerNames = GuardedState<[String]>([])
  let mainPort = try NamedPortServer(name: "com.myapp.MainThread") { message in
    if message.msgid == checkInMessage {
      workerNames.withLock { $0.append(String(decoding: message.data, as: UTF8.self)) }
    }
    return nil
  }
  try mainPort.add(to: .main, mode: .default)
  // ... start the worker process with the name "com.myapp.MainThread", run the loop, and
  // once a worker has checked in:
  let workerPort = try NamedPort(name: workerNames.withLock { $0[0] })
  let answer = try workerPort.request(msgid: 200, data: Array("12".utf8))
  print(String(decoding: answer, as: UTF8.self))  // "144"

  // Worker process, Listing 3-19.
  let main = try NamedPort(name: "com.myapp.MainThread")
  let myName = "com.myapp.thread-\(getpid())"
  let myPort = try NamedPortServer(name: myName) { message in
    message.msgid == 200 ? Array("144".utf8) : nil
  }
  try myPort.add(to: .current, mode: .default)
  try main.send(msgid: checkInMessage, data: Array(myName.utf8))
  try EventRunLoop.current.run()
  // end snippet
}

package func portsSocketsExample() throws {
  // snippet: ports-sockets
  let listener = try SocketSource(listeningOn: .tcp(host: "127.0.0.1", port: 0)) { _, fd in
    let connection = SocketSource(
      connected: fd, ownership: .owned,
      onData: { socket, bytes in socket.write(bytes) })  // echo
    try? connection.add(to: .current, mode: .default)
  }
  try listener.add(to: .current, mode: .default)

  let client = try SocketSource(
    connectingTo: .tcp(host: "127.0.0.1", port: listener.localPort!),
    onConnect: { socket, error in if error == nil { socket.write(Array("hi".utf8)) } },
    onData: { _, bytes in print("echoed \(bytes.count) bytes") })
  try client.add(to: .current, mode: .default)
  // end snippet
}
