import Glibc
import RunLoopCore
import Synchronization
import Testing

/// Holds a request through an unowned reference only. The object's memory stays allocated
/// while the reference exists, so its identity cannot be handed to a new object.
private final class UnownedHandle: Sendable {
  unowned let request: PerformRequest

  init(_ request: PerformRequest) {
    self.request = request
  }
}

@Suite("Perform requests: the linked queue and its edges")
struct PerformRequestListTests {
  // `weak var last = loop.perform { }`, to cancel it later if it has not run yet: once it
  // ran, the handle must not stand for somebody else's request.
  @Test func aWeakReferenceToAFinishedRequestNeverStandsForALaterOne() throws {
    let (cancelledAnother, sawPendingAgain, order) = try onNewThread {
      loop -> (Bool, Bool, [Int]) in
      let recorder = GuardedState<[Int]>([])
      weak let first = loop.perform { recorder.withLock { $0.append(0) } }
      try loop.run(mode: .default, timeout: .zero)
      var cancelled = false
      var pendingAgain = false
      for index in 1..<20 {
        loop.perform { recorder.withLock { $0.append(index) } }
        if first?.state == .pending { pendingAgain = true }
        if first?.cancel() == true { cancelled = true }
        try loop.run(mode: .default, timeout: .zero)
      }
      return (cancelled, pendingAgain, recorder.withLock { $0 })
    }
    #expect(!cancelledAnother)
    #expect(!sawPendingAgain)
    #expect(order == Array(0..<20))
  }

  @Test func aRequestAnUnownedReferenceNamesIsNeverHandedOutAgain() throws {
    let handedOutAgain = try onNewThread { loop -> Bool in
      var strong: PerformRequest? = loop.perform {}
      let firstID = ObjectIdentifier(strong!)
      let handle = UnownedHandle(strong!)
      strong = nil
      try loop.run(mode: .default, timeout: .zero)
      var again = false
      for _ in 0..<20 {
        if ObjectIdentifier(loop.perform {}) == firstID { again = true }
        try loop.run(mode: .default, timeout: .zero)
      }
      withExtendedLifetime(handle) {}
      return again
    }
    #expect(!handedOutAgain)
  }

  @Test func aHundredThousandQueuedRequestsAreAbandonedAtThreadExit() throws {
    let sample = try onNewThread { loop -> [PerformRequest] in
      var kept: [PerformRequest] = []
      for index in 0..<100_000 {
        let request = loop.perform(inModes: [LoopMode("never-run")]) {}
        if index % 1000 == 0 { kept.append(request) }
      }
      return kept
    }
    #expect(sample.count == 100)
    #expect(sample.allSatisfy { $0.state == .abandoned })
  }

  @Test func aHundredThousandRequestsRunInOneBatchAndAHundredThousandCancelledOnesLeave()
    throws
  {
    let (ran, queuedAfter) = try onNewThread { loop -> (Int, Bool) in
      let ran = Atomic<Int>(0)
      for _ in 0..<100_000 {
        loop.perform(inModes: [LoopMode("never-run")]) {}.cancel()
        loop.perform { ran.add(1, ordering: .relaxed) }
      }
      try loop.run(mode: .default, timeout: .zero)
      // The cancelled requests of the other mode left with that batch: nothing keeps the
      // default mode from finishing.
      let result = try loop.run(mode: .default, timeout: .seconds(30))
      return (ran.load(ordering: .relaxed), result != .finished)
    }
    #expect(ran == 100_000)
    #expect(!queuedAfter)
  }

  // A lock around taking a ticket and performing makes the order of the `perform` calls
  // known; the loop must run them in that order, reused requests or new ones.
  @Test func performsFromManyThreadsRunInTheOrderTheyWereQueued() throws {
    let threads = 4
    let perThread = 20_000
    let ticket = GuardedState(0)
    let seen = GuardedState<[Int]>([])
    let ready = Atomic<Bool>(false)
    let consumer = RunLoopThread(name: "consumer") { thread in
      try thread.runLoop.add(CustomInputSource {}, mode: .default)
      ready.store(true, ordering: .releasing)
      while !thread.isCancelled {
        try thread.runLoop.run(mode: .default, timeout: .milliseconds(50))
      }
    }
    try consumer.start()
    while !ready.load(ordering: .acquiring) { usleep(100) }
    let loop = consumer.runLoop
    var producers: [RunLoopThread] = []
    for index in 0..<threads {
      let producer = RunLoopThread(name: "producer\(index)") { _ in
        for _ in 0..<perThread {
          ticket.withLock { next in
            let mine = next
            next += 1
            loop.perform { seen.withLock { $0.append(mine) } }
          }
        }
      }
      try producer.start()
      producers.append(producer)
    }
    for producer in producers { try producer.join() }
    let settled = eventually(60) { seen.withLock { $0.count } == threads * perThread }
    consumer.cancel()
    loop.wakeUp()
    try consumer.join()
    #expect(settled)
    #expect(seen.withLock { $0 } == Array(0..<(threads * perThread)))
  }

  // The batch in flight is the outer run's: a nested run in another mode runs that mode's
  // requests (also one queued by the running request), and the outer batch goes on after it.
  @Test func aNestedRunInAnotherModeLeavesTheOuterBatchToTheOuterRun() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let other: LoopMode = "other"
      try loop.add(CustomInputSource {}, mode: other)
      loop.perform(inModes: [other]) { recorder.mark("other 1") }
      loop.perform {
        recorder.mark("outer 1 starts")
        loop.perform(inModes: [other]) { recorder.mark("other 2") }
        loop.perform { recorder.mark("queued by outer 1") }
        _ = try? loop.run(mode: other, timeout: .zero)
        recorder.mark("outer 1 ends")
      }
      loop.perform { recorder.mark("outer 2") }
      try loop.run(mode: .default, timeout: .zero)
      return recorder.log
    }
    #expect(
      log == [
        "outer 1 starts", "other 1", "other 2", "outer 1 ends", "outer 2", "queued by outer 1",
      ])
  }

  @Test func stopFromARequestEndsTheRunAfterTheRestOfItsBatch() throws {
    let (result, log) = try onNewThread { loop -> (RunResult, [String]) in
      let recorder = LoopRecorder()
      try loop.add(CustomInputSource {}, mode: .default)
      loop.perform {
        recorder.mark("a")
        loop.stop()
      }
      loop.perform { recorder.mark("b") }
      let result = try loop.run(mode: .default, timeout: .seconds(30))
      return (result, recorder.log)
    }
    #expect(result == .stopped)
    #expect(log == ["a", "b"])
  }

  @Test func anInstrumentAttachedByARequestHearsTheRestOfTheBatch() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder(.callouts)
      loop.perform { loop.addInstrument(recorder) }
      loop.perform(name: "second") {}
      loop.perform {}
      try loop.run(mode: .default, timeout: .zero)
      loop.removeInstrument(recorder)
      return recorder.log
    }
    #expect(log == ["callout:block:second", "callout:block:perform"])
  }
}
