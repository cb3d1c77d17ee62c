import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Testing

/// A port of a loop whose thread exits: its sequence ends and sends throw
/// `loopThreadExited`, instead of being accepted for a handler that can never run.
@Suite("Ports of a loop whose thread exits")
struct PortThreadExitTests {
  @Test func aPortsMessagesEndAndSendsThrowLoopThreadExitedWhenTheThreadExits() async throws {
    let thread = RunLoopThread(name: "port-exit") { thread in
      try thread.runLoop.runUntilStopped()
    }
    try thread.start()
    let (port, messages) = try InProcessPort.messages(on: thread.runLoop)
    try port.send(msgid: 1, before: .now + .seconds(5))
    var ids: [PortMessageID] = []
    for await message in messages {
      ids.append(message.msgid)
      thread.stop()
    }
    try await thread.join()
    #expect(ids == [1])
    #expect(messages.failure?.code == .loopThreadExited)
    #expect(throws: RunLoopError.loopThreadExited("")) {
      try port.send(msgid: 2, before: .now + .seconds(5))
    }
    #expect(!port.isValid)
  }

  @Test func addingAPortToALoopWhoseThreadExitedThrowsLoopThreadExited() async throws {
    let thread = RunLoopThread(name: "port-exited") { thread in
      try thread.runLoop.runUntilStopped()
    }
    try thread.start()
    thread.stop()
    try await thread.join()
    #expect(throws: RunLoopError.loopThreadExited("")) {
      _ = try InProcessPort.messages(on: thread.runLoop)
    }
  }
}
