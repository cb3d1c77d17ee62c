import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Testing

@Suite("Ports, signals and descriptors as async sequences")
struct PortSequenceTests {
  @Test func portMessagesArriveInTheOrderTheyWereSent() async throws {
    let worker = try startLoopThread(name: "port-seq")
    defer { stopLoopThread(worker) }
    let (port, messages) = try InProcessPort.messages(on: worker.runLoop)
    for id in 1...5 { try port.send(msgid: PortMessageID(id), before: .now + .seconds(5)) }
    var ids: [PortMessageID] = []
    for await message in messages {
      ids.append(message.msgid)
      if ids.count == 5 { break }
    }
    #expect(ids == [1, 2, 3, 4, 5])
    #expect(messages.droppedCount == 0)
    // Leaving the loop ended the sequence and invalidated the port.
    #expect(port.isValid == false)
  }

  @Test func aFullBufferRefusesLaterMessagesAndCountsThem() async throws {
    let worker = try startLoopThread(name: "port-full")
    defer { stopLoopThread(worker) }
    let (port, messages) = try InProcessPort.messages(on: worker.runLoop, buffering: .oldest(2))
    for id in 1...5 { try port.send(msgid: PortMessageID(id), before: .now + .seconds(5)) }
    #expect(await eventuallyAsync { messages.droppedCount == 3 })
    var iterator = messages.makeAsyncIterator()
    #expect(await iterator.next()?.msgid == 1)
    #expect(await iterator.next()?.msgid == 2)
    try port.send(msgid: 6, before: .now + .seconds(5))
    #expect(await iterator.next()?.msgid == 6)
    #expect(messages.droppedCount == 3)
  }

  @Test func cancellingTheConsumingTaskInvalidatesThePort() async throws {
    let worker = try startLoopThread(name: "port-cancel")
    defer { stopLoopThread(worker) }
    let (port, messages) = try InProcessPort.messages(on: worker.runLoop)
    let consumer = Task {
      var count = 0
      for await _ in messages { count += 1 }
      return count
    }
    try port.send(msgid: 1, before: .now + .seconds(5))
    try await Task.sleep(for: .milliseconds(20))
    consumer.cancel()
    #expect(await consumer.value == 1)
    #expect(port.isValid == false)
    #expect(messages.isFinished)
  }

  @Test func signalsOfASignalSourceArriveAsASequence() async throws {
    let box = GuardedState<(LoopEvents<ReceivedSignal>, pthread_t)?>(nil)
    // Thread-directed signals at the loop's thread (which blocks them, as the test's threads
    // all do): the rest of the test process is not disturbed. SIGVTALRM, which no other test uses: every source of a signal receives it.
    let worker = try startLoopThread(name: "signal-seq") { loop in
      let signals = try SignalSource.signals([SIGVTALRM], on: loop)
      box.withLock { $0 = (signals, pthread_self()) }
    }
    defer { stopLoopThread(worker) }
    let (signals, thread) = try #require(box.withLock { $0 })
    box.withLock { $0 = nil }
    pthread_kill(thread, SIGVTALRM)
    var iterator = signals.makeAsyncIterator()
    let first = await iterator.next()
    #expect(first?.signal == SIGVTALRM)
    #expect(first?.senderPID == getpid())
    pthread_kill(thread, SIGVTALRM)
    #expect(await iterator.next()?.signal == SIGVTALRM)
    #expect(signals.droppedCount == 0)
  }

  @Test func descriptorReadinessPausesUntilTheConsumerAsksAgainAndDropsNothing() async throws {
    let worker = try startLoopThread(name: "readiness")
    defer { stopLoopThread(worker) }
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    defer {
      close(fds[0])
      close(fds[1])
    }
    _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
    let readiness = try DescriptorSource.readiness(of: fds[0], on: worker.runLoop)
    var iterator = readiness.makeAsyncIterator()
    var byte: UInt8 = 1
    var reports = 0
    for round in 0..<3 {
      _ = write(fds[1], &byte, 1)
      let events = await iterator.next()
      #expect(events == .readable, "round \(round)")
      reports += 1
      // Unread for a while: the paused watch reports nothing more (level-triggered, it
      // would report every pass).
      try await Task.sleep(for: .milliseconds(20))
      #expect(readiness.droppedCount == 0)
      #expect(read(fds[0], &byte, 1) == 1)
    }
    #expect(reports == 3)
    _ = write(fds[1], &byte, 1)
    _ = close(fds[1])
    fds[1] = open("/dev/null", O_WRONLY)
    #expect(await iterator.next() != nil)
  }

  @Test func aSequenceWhoseSourceCannotStartThrowsAndStopsTheSource() throws {
    let worker = try startLoopThread(name: "readiness-refused")
    defer { stopLoopThread(worker) }
    // epoll refuses a regular file: adding the watch fails, and the owned descriptor is
    // closed by the source's invalidation instead of leaking.
    var template = Array("/tmp/rl-readiness-XXXXXX".utf8CString)
    let file = mkstemp(&template)
    #expect(file >= 0)
    let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    defer { unlink(path) }
    #expect(openedFile(file) == path)
    #expect(throws: RunLoopError.self) {
      try DescriptorSource.readiness(of: file, on: worker.runLoop, ownership: .owned)
    }
    // Closed (the number may already serve another test's descriptor, not this file).
    #expect(openedFile(file) != path)
  }
}

/// The file descriptor `fd` of this process has open, from /proc; `nil` when it is closed.
private func openedFile(_ fd: Int32) -> String? {
  var buffer = [CChar](repeating: 0, count: 4096)
  let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
  guard count > 0 else { return nil }
  return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
