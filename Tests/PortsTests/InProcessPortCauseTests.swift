import CRunLoopLinux
import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Testing

/// Keeps the call-out records a loop reports.
@Suite("In-process port messages and their causes")
struct InProcessPortCauseTests {
  @Test func eachMessageRunsInItsOwnPortCalloutNamingTheSendingCalloutAsItsCause() throws {
    let receiverLog = LoopRecorder(.callouts)
    let port = try InProcessPort(name: "inbox") { _ in }
    let receiver = try startLoopThread("receiver") { loop in
      loop.addInstrument(receiverLog)
      try port.add(to: loop, mode: .default)
    }
    let sender = try startLoopThread("sender")
    let senderLog = LoopRecorder(.callouts)
    sender.runLoop.addInstrument(senderLog)
    sender.runLoop.perform(name: "send") {
      try? port.send(msgid: 1, before: .now + .seconds(5))
      try? port.send(msgid: 2, before: .now + .seconds(5))
    }
    sender.runLoop.wakeUp()
    #expect(eventually { receiverLog.records.filter { $0.name == "inbox" }.count == 2 })
    let sending = try #require(senderLog.records.first { $0.name == "send" })
    let expected = CalloutCause(
      span: sending.span, threadID: try #require(sender.threadID), loopID: sender.runLoop.id)
    let messages = receiverLog.records.filter { $0.name == "inbox" }
    #expect(messages.map(\.kind) == [.port, .port])
    #expect(messages.map(\.cause) == [expected, expected])
    #expect(messages.allSatisfy { $0.dueAt != nil && $0.span != 0 })
    #expect(Set(messages.map(\.span)).count == 2)
    // One call-out per message, none for draining the port's queue.
    #expect(receiverLog.records.filter { $0.kind == .port }.count == 2)
    try finish(sender)
    try finish(receiver)
    port.invalidate()
  }

  // A handler that runs the loop nested hands the rest of its batch to the nested run, which
  // delivers it: those messages are call-outs of the loop too, each with its record.
  @Test func messagesANestedRunDeliversFromTheOuterBatchAreCalloutsToo() throws {
    let delivered = try onNewThread("nested") { loop -> Int in
      let log = LoopRecorder(.callouts)
      loop.addInstrument(log)
      defer { loop.removeInstrument(log) }
      let portBox = GuardedState<InProcessPort?>(nil)
      let port = try InProcessPort(name: "inbox") { message in
        guard message.msgid == 1, let port = portBox.withLock({ $0 }) else { return }
        // A new message makes the port ready again, so the nested run calls it.
        try? port.send(msgid: 4, before: .now + .seconds(5))
        _ = try? loop.run(mode: .default, timeout: .zero)
      }
      portBox.withLock { $0 = port }
      defer { port.invalidate() }
      try port.add(to: loop, mode: .default)
      for msgid: PortMessageID in 1...3 { try port.send(msgid: msgid, before: .now + .seconds(5)) }
      try loop.run(mode: .default, timeout: .zero)
      portBox.withLock { $0 = nil }
      return log.records.filter { $0.kind == .port && $0.name == "inbox" }.count
    }
    // 1 from the outer call, then 2 and 3 (left from its batch) and 4 from the nested one.
    #expect(delivered == 4)
  }
}
