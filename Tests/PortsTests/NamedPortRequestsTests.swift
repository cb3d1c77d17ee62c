import Dispatch
import Glibc
import RunLoopCore
import RunLoopPorts
import Testing

/// The code a client's request failed with, or `nil` when it got a reply.
private func failureCode(_ body: () async throws(RunLoopError) -> [UInt8]) async -> RunLoopError
  .Code?
{
  do throws(RunLoopError) {
    _ = try await body()
    return nil
  } catch {
    return error.code
  }
}

/// Runs a blocking `body` on a thread of its own and awaits it, so that waiting on a helper
/// process does not hold one of the few threads every test's tasks share.
private func offThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    DispatchQueue(label: "blocking").async { continuation.resume(returning: body()) }
  }
}

/// Runs `body` with `loop` as the task's executor: the test's consumer runs on the loop's
/// thread, so it does not wait for the few threads that every test's tasks share (which
/// synchronous tests can hold for seconds) while a client's timeout runs.
private func onLoop<T>(_ loop: EventRunLoop, _ body: () async throws -> T) async throws -> T {
  try await withTaskExecutorPreference(loop) { try await body() }
}

/// A server whose messages arrive as a sequence, registered in a registry of its own and
/// served by a loop thread of its own.
private struct RequestsServer: Sendable {
  let name: String
  let temporary: TemporaryRegistry
  let loop: EventRunLoop
  let server: NamedPortServer
  let requests: LoopEvents<NamedPortRequest>

  /// A new client connection to the server.
  func connect(
    maxMessageSize: Int = NamedPortServer.defaultMaxMessageSize
  ) throws(RunLoopError) -> NamedPort {
    try NamedPort(name: name, registry: temporary.registry, maxMessageSize: maxMessageSize)
  }
}

/// Serves `name` as a sequence (see `NamedPortServer.requests`) on a new loop thread, with
/// `instrument` added to its loop first, and runs `body` on that loop's thread (see
/// `onLoop`); the thread is stopped once `body` returns or throws.
private func withRequestsServer(
  _ name: String, capacity: Int = 64,
  maxMessageSize: Int = NamedPortServer.defaultMaxMessageSize,
  instrument: (any RunLoopInstrument)? = nil,
  _ body: (RequestsServer) async throws -> Void
) async throws {
  let temporary = try TemporaryRegistry()
  let worker = try startLoopThread(name: "requests-\(name)") { loop in
    if let instrument { loop.addInstrument(instrument) }
  }
  defer { stopLoopThread(worker) }
  let (server, requests) = try NamedPortServer.requests(
    name: name, registry: temporary.registry, on: worker.runLoop, capacity: capacity,
    maxMessageSize: maxMessageSize)
  let fixture = RequestsServer(
    name: name, temporary: temporary, loop: worker.runLoop, server: server, requests: requests)
  try await onLoop(worker.runLoop) { try await body(fixture) }
}

@Suite("Named-port requests as an async sequence")
struct NamedPortRequestsTests {
  @Test func requestsAndOneWayMessagesArriveInTheOrderTheClientSentThem() async throws {
    try await withRequestsServer("ordered") { fixture in
      let port = try fixture.connect()
      let client = Task {
        for id in 1...5 { try port.send(msgid: Int32(id), data: [UInt8(id)]) }
        return try await port.request(msgid: 6, data: [6], receiveTimeout: .seconds(30))
      }
      var seen: [Int32] = []
      for await request in fixture.requests {
        seen.append(request.message.msgid)
        #expect(request.message.data == [UInt8(request.message.msgid)])
        #expect(request.message.peerPID == getpid())
        #expect(request.expectsReply == (request.message.msgid == 6))
        if request.expectsReply {
          #expect(request.reply([60]))
          break
        }
      }
      #expect(seen == [1, 2, 3, 4, 5, 6])
      #expect(try await client.value == [60])
      #expect(fixture.server.statistics.messagesHandled == 6)
      #expect(fixture.server.statistics.requestsUnanswered == 0)
    }
  }

  // The other way round from cancelling the consumer: the server invalidated by its owner
  // ends the sequence, and the consumer still gets every message the server had read before,
  // in order (the sequence's buffer outlives the connections), then the end.
  @Test func invalidatingTheServerEndsTheSequenceAfterWhatItBuffered() async throws {
    try await withRequestsServer("closing") { fixture in
      let port = try fixture.connect()
      // Out of numeric order, so that only the order of arrival can give them back as sent.
      let sent: [Int32] = [3, 1, 2]
      for id in sent { try port.send(msgid: id, data: [UInt8(id)]) }
      // All of them in the buffer before the invalidation, and none taken: nobody consumes
      // until it has happened.
      #expect(await eventuallyAsync { fixture.server.statistics.messagesHandled == 3 })
      fixture.server.invalidate()
      #expect(!fixture.server.isValid)
      let ended = GuardedState(false)
      let consumer = Task(executorPreference: fixture.loop) {
        var msgids: [Int32] = []
        var data: [[UInt8]] = []
        var iterator = fixture.requests.makeAsyncIterator()
        while let request = await iterator.next() {
          msgids.append(request.message.msgid)
          data.append(request.message.data)
        }
        // Ended for good: asking again does not wait for more.
        let endedAgain = await iterator.next() == nil
        ended.withLock { $0 = true }
        return (msgids, data, endedAgain)
      }
      // A bounded wait, so that a sequence that does not end fails the test instead of
      // hanging it; cancelling the consumer then ends its wait.
      let endedInTime = await eventuallyAsync { ended.withLock { $0 } }
      #expect(endedInTime, "the sequence did not end after its buffered messages")
      if !endedInTime { consumer.cancel() }
      let (msgids, data, endedAgain) = await consumer.value
      #expect(msgids == sent)
      #expect(data == sent.map { [UInt8($0)] })
      #expect(endedAgain)
    }
  }

  // A request still waiting when its server is invalidated can no longer be answered (its
  // connection is closed): the reply says so, the client learns it from its side, and the
  // loss is counted once, as an answer that did not reach its client.
  @Test func aReplyAfterTheServerWasInvalidatedIsRefusedAndCountedOnce() async throws {
    try await withRequestsServer("abandoned") { fixture in
      let port = try fixture.connect()
      let client = Task {
        await failureCode { () async throws(RunLoopError) -> [UInt8] in
          try await port.request(msgid: 1, data: [1], receiveTimeout: .seconds(30))
        }
      }
      for await request in fixture.requests {
        #expect(request.expectsReply)
        fixture.server.invalidate()
        #expect(!request.reply([10]))
      }
      // The server closed the connection without a reply: not a time-out.
      #expect(await client.value == .peerClosed)
      #expect(fixture.server.statistics.repliesUndelivered == 1)
      #expect(fixture.server.statistics.requestsAnsweredAtStop == 0)
      #expect(fixture.server.statistics.requestsUnanswered == 0)
    }
  }

  @Test func repliesSentOutOfOrderFromOtherThreadsReachTheRightClients() async throws {
    try await withRequestsServer("routing") { fixture in
      let clientCount = 4
      let rounds = 3
      let clients = try (0..<clientCount).map { index in
        let port = try fixture.connect()
        return Task {
          var replies: [[UInt8]] = []
          for round in 0..<rounds {
            replies.append(
              try await port.request(
                msgid: Int32(index), data: [UInt8(index), UInt8(round)],
                receiveTimeout: .seconds(30)))
          }
          return replies
        }
      }
      // Every client has one request out at a time: take one of each, answer them in reverse
      // order, from other threads (through the loop's perform queue) and from other tasks
      // (on the loop's thread, at once).
      var iterator = fixture.requests.makeAsyncIterator()
      for _ in 0..<rounds {
        var batch: [NamedPortRequest] = []
        while batch.count < clientCount, let request = await iterator.next() {
          batch.append(request)
        }
        #expect(batch.count == clientCount)
        for (position, request) in batch.reversed().enumerated() {
          let reply = request.message.data + [0xFF]
          if position.isMultiple(of: 2) {
            DispatchQueue(label: "replier").async { request.reply(reply) }
          } else {
            Task { request.reply(reply) }
          }
        }
      }
      for (index, client) in clients.enumerated() {
        let expected = (0..<rounds).map { [UInt8(index), UInt8($0), 0xFF] }
        #expect(try await client.value == expected)
      }
      #expect(fixture.server.statistics.repliesUndelivered == 0)
      #expect(fixture.requests.droppedCount == 0)
    }
  }

  @Test func aFullBufferRefusesNewRequestsWithServerBusyAndCountsThem() async throws {
    try await withRequestsServer("busy", capacity: 2) { fixture in
      let server = fixture.server
      let first = try fixture.connect()
      let second = try fixture.connect()
      let late = try fixture.connect()
      // Both wait in the buffer, in the order they arrived; nobody consumes yet.
      var waiting: [Task<[UInt8], any Error>] = []
      for (index, port) in [first, second].enumerated() {
        waiting.append(
          Task(executorPreference: fixture.loop) {
            try await port.request(msgid: Int32(index + 1), receiveTimeout: .seconds(30))
          })
        #expect(await eventuallyAsync { server.statistics.messagesHandled == index + 1 })
      }
      #expect(
        await failureCode { () async throws(RunLoopError) in
          try await late.request(msgid: 3)
        } == .serverBusy)
      // The code once, then the reason: the message does not repeat the code.
      do throws(RunLoopError) {
        _ = try await late.request(msgid: 3)
        Issue.record("a request past the buffer was taken")
      } catch {
        #expect(error.message.hasPrefix("port '"), "\(error.message)")
        #expect("\(error)".hasPrefix("serverBusy: port '"), "\(error)")
      }
      try late.send(msgid: 4)
      #expect(await eventuallyAsync { server.statistics.messagesDroppedBusy == 1 })
      #expect(server.statistics.requestsRefusedBusy == 2)
      #expect(fixture.requests.droppedCount == 3)
      // The consumer catches up: the two buffered requests are answered, in order, and the
      // buffer takes requests again.
      var iterator = fixture.requests.makeAsyncIterator()
      for expected in Int32(1)...2 {
        let request = try #require(await iterator.next())
        #expect(request.message.msgid == expected)
        request.reply([UInt8(expected)])
      }
      #expect(try await waiting[0].value == [1])
      #expect(try await waiting[1].value == [2])
      let retry = Task { try await late.request(msgid: 5, receiveTimeout: .seconds(30)) }
      let request = try #require(await iterator.next())
      #expect(request.message.msgid == 5)
      request.reply([5])
      #expect(try await retry.value == [5])
    }
  }

  @Test func cancellingTheConsumerStopsTheServerAndAnswersWaitingClientsWithServerStopped()
    async throws
  {
    try await withRequestsServer("stopping") { fixture in
      let server = fixture.server
      let requests = fixture.requests
      let taken = GuardedState(0)
      let consumer = Task(executorPreference: fixture.loop) {
        // Holds the first two requests without replying, then stops taking more.
        var held: [NamedPortRequest] = []
        var iterator = requests.makeAsyncIterator()
        while held.count < 2, let request = await iterator.next() {
          held.append(request)
          taken.withLock { $0 = held.count }
        }
        try? await Task.sleep(for: .seconds(60))
        _ = await iterator.next()
        return held.count
      }
      let ports = try (0..<3).map { _ in try fixture.connect() }
      let clients = ports.enumerated().map { index, port in
        Task(executorPreference: fixture.loop) {
          await failureCode { () async throws(RunLoopError) in
            try await port.request(msgid: Int32(index), receiveTimeout: .seconds(30))
          }
        }
      }
      // Two held by the consumer, one in the buffer.
      #expect(await eventuallyAsync { server.statistics.messagesHandled == 3 })
      #expect(await eventuallyAsync { taken.withLock { $0 } == 2 })
      consumer.cancel()
      #expect(await consumer.value == 2)
      for client in clients { #expect(await client.value == .serverStopped) }
      #expect(server.statistics.requestsAnsweredAtStop == 3)
      #expect(server.statistics.requestsUnanswered == 0)
      #expect(server.isValid == false)
      #expect(requests.isFinished)
      #expect(throws: RunLoopError.nameNotFound("")) { try fixture.connect() }
    }
  }

  @Test func aRequestDroppedWithoutAReplyGetsARequestDroppedFailureInTheClientProcess()
    async throws
  {
    try await withRequestsServer("dropping") { fixture in
      // A patient client: a loaded machine may keep the consumer from running for a while.
      let helper = try HelperProcess(
        ["ports-request-timed", fixture.temporary.directory, "dropping", "60000"])
      var iterator = fixture.requests.makeAsyncIterator()
      let ignored = try #require(await iterator.next())
      #expect(ignored.message.msgid == 1)
      #expect(ignored.message.peerPID == helper.pid)
      _ = consume ignored
      let outcome = await offThread { helper.readLine(timeout: .seconds(60)) }
      #expect(outcome?.hasPrefix("error:requestDropped ") == true, "\(outcome ?? "nothing")")
      #expect(await offThread { helper.waitForExit() } == 0)
      #expect(fixture.server.statistics.requestsUnanswered == 1)
      // The server goes on serving.
      let port = try fixture.connect()
      let client = Task { try await port.request(msgid: 8, receiveTimeout: .seconds(30)) }
      let answered = try #require(await iterator.next())
      #expect(answered.reply([8]))
      #expect(try await client.value == [8])
    }
  }

  @Test func aRequestIsAnsweredOnceAndAOneWayMessageNotAtAll() async throws {
    try await withRequestsServer("once") { fixture in
      let port = try fixture.connect()
      try port.send(msgid: 1)
      let client = Task {
        try await port.request(msgid: 2, data: [2], receiveTimeout: .seconds(30))
      }
      var iterator = fixture.requests.makeAsyncIterator()
      let oneWay = try #require(await iterator.next())
      #expect(oneWay.expectsReply == false)
      #expect(oneWay.reply([1]) == false)
      let request = try #require(await iterator.next())
      #expect(request.reply([20]))
      #expect(request.reply([21]) == false)
      #expect(try await client.value == [20])
      _ = consume request
      #expect(fixture.server.statistics.requestsUnanswered == 0)
    }
  }

  @Test func aReplyAboveTheMaximumSizeReachesTheClientAsMessageTooLarge() async throws {
    try await withRequestsServer("large", maxMessageSize: 16) { fixture in
      let port = try fixture.connect(maxMessageSize: 16)
      // On the loop too: a bare `Task {}` does not inherit the executor preference, and on
      // the shared threads a loaded run started it more than the server's 30 s idle timeout
      // after its port connected.
      let client = Task(executorPreference: fixture.loop) {
        await failureCode { () async throws(RunLoopError) in
          try await port.request(msgid: 1, receiveTimeout: .seconds(30))
        }
      }
      var iterator = fixture.requests.makeAsyncIterator()
      let request = try #require(await iterator.next())
      #expect(request.reply([UInt8](repeating: 0, count: 17)))
      #expect(await client.value == .messageTooLarge)
    }
  }

  @Test func aReplyFromTheSequenceCarriesTheRequestsTraceBackFromTheCalloutThatSentIt()
    async throws
  {
    let log = LoopRecorder(.callouts)
    try await withRequestsServer("traced", instrument: log) { fixture in
      let helper = try HelperProcess(
        ["ports-traced-request", fixture.temporary.directory, "traced"])
      var iterator = fixture.requests.makeAsyncIterator()
      let request = try #require(await iterator.next())
      let cause = try #require(request.message.cause)
      let trace = try #require(cause.traceID)
      #expect(cause.processID == helper.pid)
      // From another thread: the reply leaves in a call-out of its own.
      let data = request.message.data
      DispatchQueue(label: "replier").async { request.reply(data) }
      _ = await offThread { helper.readLine() }
      let replied = await offThread { helper.readLine() }
      #expect(await offThread { helper.waitForExit() } == 0)
      // The message reached the sequence in a port call-out caused by the sender, and the
      // reply left in the loop's call-out named after the port's replies.
      let arrival = try #require(log.first(named: "traced.request"))
      #expect(arrival.cause == cause)
      let sending = try #require(log.first(named: "traced.reply"))
      let hex = { (value: UInt64) in
        String(repeating: "0", count: 16 - String(value, radix: 16).count)
          + String(value, radix: 16)
      }
      #expect(
        replied
          == "reply:traced.reply cause:\(hex(sending.span)) pid:\(getpid())"
          + " trace:\(hex(trace.high))\(hex(trace.low))")
    }
  }
}
