import Glibc
import RunLoopCore
import Testing

@Suite("Idle loops and descriptor watches")
struct IdleAndDescriptorTests {
  @Test func idleLoopMakesOnePassAndSleepsUntilTheTimeout() throws {
    let passes = try onNewThread { loop -> Int in
      let recorder = LoopRecorder()
      try loop.add(CustomInputSource {}, mode: .default)
      loop.addInstrument(recorder)
      try loop.run(mode: .default, timeout: .milliseconds(300))
      return recorder.log.filter { $0 == "beforeWaiting" }.count
    }
    #expect(passes == 1)
  }

  @Test func readyDescriptorIsHandledOnTheLoopThreadAndCountsAsHandledSource() throws {
    let pipe = Pipe()
    let (result, reads) = try onNewThread { loop -> (RunResult, [String]) in
      let reads = GuardedState<[String]>([])
      let watch = DescriptorWatch(fileDescriptor: pipe.readEnd, name: "pipe") { events in
        _ = pipe.readByte()
        reads.withLock { $0.append("\(events):\(EventRunLoop.current === loop)") }
      }
      try loop.add(watch, mode: .default)
      pipe.writeByte()
      let result = try loop.run(
        mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
      watch.invalidate()
      return (result, reads.withLock { $0 })
    }
    #expect(result == .handledSource)
    #expect(reads == ["readable:true"])
  }

  @Test func runsThatReturnAfterOneSourceTakeEqualOrderDescriptorsInTurn() throws {
    // Two descriptors that stay readable (nobody reads them), like a port kept full by its
    // senders next to a signal: each run handles one, and neither may starve the other.
    let first = Pipe()
    let second = Pipe()
    let handled = try onNewThread { loop -> [String] in
      let handled = GuardedState<[String]>([])
      let watches = [(first, "first"), (second, "second")].map { pipe, name in
        DescriptorWatch(fileDescriptor: pipe.readEnd, name: name) { _ in
          handled.withLock { $0.append(name) }
        }
      }
      for watch in watches { try loop.add(watch, mode: .default) }
      first.writeByte()
      second.writeByte()
      for _ in 0..<10 {
        let result = try loop.run(
          mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
        #expect(result == .handledSource)
      }
      for watch in watches { watch.invalidate() }
      return handled.withLock { $0 }
    }
    #expect(handled.count == 10)
    #expect(handled.filter { $0 == "first" }.count == 5)
    #expect(handled.filter { $0 == "second" }.count == 5)
    #expect(zip(handled, handled.dropFirst()).allSatisfy { $0 != $1 })
  }

  @Test func descriptorReadyInAModeThatIsNotRunningIsHeldWithoutSpinning() throws {
    let pipe = Pipe()
    let (passes, handledLater) = try onNewThread { loop -> (Int, Bool) in
      let handled = GuardedState(false)
      let other: LoopMode = "other"
      let watch = DescriptorWatch(fileDescriptor: pipe.readEnd, name: "held") { _ in
        _ = pipe.readByte()
        handled.withLock { $0 = true }
      }
      try loop.add(watch, mode: other)
      try loop.add(CustomInputSource {}, mode: .default)
      pipe.writeByte()
      let recorder = LoopRecorder()
      loop.addInstrument(recorder)
      try loop.run(mode: .default, timeout: .milliseconds(200))
      let passes = recorder.log.filter { $0 == "beforeTimers" }.count
      #expect(!handled.withLock { $0 })
      try loop.run(mode: other, timeout: .seconds(30), returnAfterSourceHandled: true)
      watch.invalidate()
      return (passes, handled.withLock { $0 })
    }
    // The first pass may see the descriptor once and set it aside; it must not come back.
    #expect(passes <= 2)
    #expect(handledLater)
  }

  @Test func secondWatchOnTheSameDescriptorIsAnError() throws {
    let pipe = Pipe()
    try onNewThread { loop in
      let first = DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in }
      let second = DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in }
      try loop.add(first, mode: .default)
      #expect(throws: RunLoopError.alreadyInUse("")) { try loop.add(second, mode: .default) }
      first.invalidate()
      try loop.add(second, mode: .default)
      second.invalidate()
    }
  }

  @Test func closedDescriptorIsAClearError() throws {
    try onNewThread { loop in
      let watch = DescriptorWatch(fileDescriptor: 987) { _ in }
      #expect(throws: RunLoopError(code: .systemCallFailed, message: "")) {
        try loop.add(watch, mode: .default)
      }
    }
  }

  @Test func writableInterestCanBeTurnedOnAndOff() throws {
    let pipe = Pipe()
    let events = try onNewThread { loop -> [String] in
      let seen = GuardedState<[String]>([])
      let watch = DescriptorWatch(fileDescriptor: pipe.writeEnd, interest: []) { events in
        seen.withLock { $0.append("\(events)") }
      }
      try loop.add(watch, mode: .default)
      try loop.run(mode: .default, timeout: .zero)
      try watch.setInterest(.writable)
      try loop.run(mode: .default, timeout: .zero)
      try watch.setInterest([])
      try loop.run(mode: .default, timeout: .zero)
      watch.invalidate()
      #expect(throws: RunLoopError.invalidated("")) { try watch.setInterest(.writable) }
      return seen.withLock { $0 }
    }
    #expect(events == ["writable"])
  }
}

/// Records the order in which it hears activities into a shared log.
private final class OrderedInstrument: RunLoopInstrument, @unchecked Sendable {
  let name: String
  let notificationOrder: Int
  let log: LoopRecorder
  var interests: InstrumentInterests { .activities }

  init(_ name: String, order: Int, log: LoopRecorder) {
    self.name = name
    self.notificationOrder = order
    self.log = log
  }

  func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    if activity == .entry { log.mark(name) }
  }
}

@Suite("Instruments")
struct InstrumentTests {
  @Test func instrumentsHearEventsByNotificationOrderThenAttachmentOrder() throws {
    let log = try onNewThread { loop -> [String] in
      let log = LoopRecorder()
      try loop.add(CustomInputSource {}, mode: .default)
      loop.addInstrument(OrderedInstrument("late", order: 10, log: log))
      loop.addInstrument(OrderedInstrument("first", order: 0, log: log))
      loop.addInstrument(OrderedInstrument("second", order: 0, log: log))
      try loop.run(mode: .default, timeout: .zero)
      return log.log
    }
    #expect(log == ["first", "second", "late"])
  }

  @Test func instrumentAttachedToTheLoopAndToEveryLoopHearsEachEventOnce() throws {
    let counter = EntryCounter()
    EventRunLoop.addProcessInstrument(counter)
    defer { EventRunLoop.removeProcessInstrument(counter) }
    let entries = try onNewThread { loop -> Int in
      try loop.add(CustomInputSource {}, mode: .default)
      loop.addInstrument(counter)
      counter.watch(loop)
      try loop.run(mode: .default, timeout: .zero)
      return counter.count
    }
    #expect(entries == 1)
  }
}

/// Counts `entry` activities of one loop (other tests' loops run at the same time and reach
/// process-wide instruments too).
private final class EntryCounter: RunLoopInstrument, @unchecked Sendable {
  private let state = GuardedState<(loopID: UInt64?, count: Int)>((nil, 0))
  var interests: InstrumentInterests { .activities }

  func watch(_ loop: EventRunLoop) { state.withLock { $0.loopID = loop.id } }

  var count: Int { state.withLock { $0.count } }

  func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    guard activity == .entry else { return }
    state.withLock { if $0.loopID == info.loopID { $0.count += 1 } }
  }
}
