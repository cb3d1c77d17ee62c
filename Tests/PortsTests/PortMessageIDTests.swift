import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Testing

/// One message-id type for both kinds of port: an id read from an in-process port is sent
/// on a named port as it is, and the server reads the same id, negative and extreme ones too.
@Suite("One message-id type for every port")
struct PortMessageIDTests {
  @Test func anIdFromAnInProcessPortReachesANamedPortServerUnconverted() async throws {
    let temporary = try TemporaryRegistry()
    let worker = try startLoopThread(name: "message-ids")
    defer { stopLoopThread(worker) }
    let (server, requests) = try NamedPortServer.requests(
      name: "ids", registry: temporary.registry, on: worker.runLoop)
    let client = try NamedPort(name: "ids", registry: temporary.registry)
    let (port, messages) = try InProcessPort.messages(on: worker.runLoop)
    let sent: [PortMessageID] = [-7, .max, .min, 0]
    for id in sent { try port.send(msgid: id, before: .now + .seconds(5)) }
    var forwarded = 0
    for await message in messages {
      // No conversion: the in-process message's id is the named port's argument.
      try client.send(msgid: message.msgid, data: [])
      forwarded += 1
      if forwarded == sent.count { break }
    }
    var received: [PortMessageID] = []
    for await request in requests {
      received.append(request.message.msgid)
      if received.count == sent.count { break }
    }
    #expect(received == sent)
    client.invalidate()
    server.invalidate()
  }
}
