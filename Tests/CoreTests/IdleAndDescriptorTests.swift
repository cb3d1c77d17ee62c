import Glibc
import RunLoopCore
import Testing

@Suite("Idle loops and descriptor watches")
struct IdleAndDescriptorTests {
  @Test func idleLoopMakesOnePassAndSleepsUntilTheTimeout() throws {
    let passes = try onNewThread { loop -> Int in
      let recorder = Recorder()
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
      let recorder = Recorder()
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
