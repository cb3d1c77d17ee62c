import Dispatch
import Glibc
import RunLoopCore
import RunLoopPorts
import Testing

/// Keeps every call-out record of the loops it is attached to, in order.
/// A version-2 frame carries the sending call-out's span and trace id; the server's
/// handler runs in a call-out caused by it, and the reply's receipt is a call-out caused by
/// the handler.
@Suite("Named-port trace context")
struct NamedPortTraceContextTests {
  @Test func handlerCalloutIsCausedByTheSendingCalloutInAnotherProcessAndTheReplyByTheHandler()
    throws
  {
    let temporary = try TemporaryRegistry()
    let log = LoopRecorder(.callouts)
    let seen = GuardedState<[NamedPortMessage]>([])
    let server = try NamedPortServer(name: "traced", registry: temporary.registry) { message in
      seen.withLock { $0.append(message) }
      return message.data
    }
    let thread = try startLoopThread("server") { loop in
      loop.addInstrument(log)
      try server.add(to: loop, mode: .default)
    }
    let helper = try HelperProcess(["ports-traced-request", temporary.directory, "traced"])
    let sent = helper.readLine() ?? ""
    let replied = helper.readLine() ?? ""
    #expect(helper.waitForExit() == 0)
    try finish(thread)
    server.invalidate()

    let handler = try #require(log.first(named: "traced.request"))
    let cause = try #require(handler.cause)
    let trace = try #require(cause.traceID)
    #expect(handler.kind == .port)
    #expect(cause.processID == helper.pid)
    #expect(cause.threadID == 0)
    #expect(cause.span != 0)
    #expect(trace.high != 0 || trace.low != 0)
    #expect(
      sent == "send:\(Self.hex(cause.span)) trace:\(Self.hex(trace.high))\(Self.hex(trace.low))")
    #expect(
      replied
        == "reply:traced.reply cause:\(Self.hex(handler.span)) pid:\(getpid())"
        + " trace:\(Self.hex(trace.high))\(Self.hex(trace.low))")
    // The handler saw the same cause.
    #expect(seen.withLock { $0.first?.cause } == cause)
    // The handler runs inside the connection's own call-out, which has no cause of its own.
    let connection = try #require(log.first(named: "traced.connection"))
    #expect(connection.start <= handler.start && handler.end <= connection.end)
  }

  @Test func requestsFromOneCalloutShareOneTraceAndCalloutsWithATraceKeepIt() throws {
    let temporary = try TemporaryRegistry()
    let serverLog = LoopRecorder(.callouts)
    let clientLog = LoopRecorder(.callouts)
    let server = try NamedPortServer(name: "relay", registry: temporary.registry) { message in
      message.data
    }
    let serverThread = try startLoopThread("server") { loop in
      loop.addInstrument(serverLog)
      try server.add(to: loop, mode: .default)
    }
    let client = try startLoopThread("client") { loop in loop.addInstrument(clientLog) }
    let port = try NamedPort(name: "relay", registry: temporary.registry)
    let done = DispatchSemaphore(value: 0)
    client.runLoop.perform(name: "two-requests") {
      _ = try? port.request(msgid: 1, data: [1])
      _ = try? port.request(msgid: 1, data: [2])
      done.signal()
    }
    done.wait()
    try finish(client)
    try finish(serverThread)
    server.invalidate()

    let sender = try #require(clientLog.first(named: "two-requests"))
    let handled = serverLog.records.filter { $0.name == "relay.request" }
    #expect(handled.count == 2)
    #expect(handled.map { $0.cause?.span } == [sender.span, sender.span])
    let traces = handled.compactMap { $0.cause?.traceID }.map { "\($0.high)-\($0.low)" }
    #expect(traces.count == 2)
    #expect(Set(traces).count == 1, "one call-out, one trace")
    // In one process the cause names no process.
    #expect(handled.allSatisfy { $0.cause?.processID == nil })
    let replies = clientLog.records.filter { $0.name == "relay.reply" }
    #expect(replies.map { $0.cause?.span } == handled.map(\.span))
  }

  @Test func framesSentOutsideTracedCalloutsCarryNoContext() throws {
    let temporary = try TemporaryRegistry()
    let log = LoopRecorder(.callouts)
    let seen = GuardedState<[NamedPortMessage]>([])
    let server = try NamedPortServer(name: "plain", registry: temporary.registry) { message in
      seen.withLock { $0.append(message) }
      return nil
    }
    let thread = try startLoopThread("server") { loop in
      loop.addInstrument(log)
      try server.add(to: loop, mode: .default)
    }
    // From a plain thread: no call-out, so no context, and the handler's call-out has no cause.
    let port = try NamedPort(name: "plain", registry: temporary.registry)
    _ = try port.request(msgid: 1)
    try finish(thread)
    server.invalidate()
    #expect(seen.withLock { $0.map(\.cause) } == [nil])
    let handler = try #require(log.first(named: "plain.request"))
    #expect(handler.cause == nil)
  }

  static func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }
}
