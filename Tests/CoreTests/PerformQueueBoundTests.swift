import Dispatch
import Glibc
import RunLoopTestSupport
import Synchronization
import Testing

@testable import RunLoopCore

/// The perform queue's bound: producers on other threads wait for room, none is lost, and
/// the depth never passes the limit.
@Suite("The perform queue's bound")
struct PerformQueueBoundTests {
  /// A loop thread held inside a call-out until `gate` opens, so that nothing drains.
  private func heldLoop(limit: Int, gate: DispatchSemaphore) throws -> RunLoopThread {
    let thread = try startLoopThread(name: "bounded") { loop in loop.performQueueLimit = limit }
    let entered = DispatchSemaphore(value: 0)
    thread.runLoop.perform {
      entered.signal()
      gate.wait()
    }
    entered.wait()
    return thread
  }

  // 8 threads flood a loop that drains nothing: the queue fills to its limit and stops
  // there, the producers wait; once the loop drains, every request runs, none lost.
  @Test func floodingThreadsWaitAtTheLimitAndLoseNothing() throws {
    let gate = DispatchSemaphore(value: 0)
    let thread = try heldLoop(limit: 1_000, gate: gate)
    defer { stopLoopThread(thread) }
    let loop = thread.runLoop
    let ran = Atomic<Int>(0)
    let queued = Atomic<Int>(0)
    let producers = 8
    let perProducer = 2_000
    let done = DispatchGroup()
    for _ in 0..<producers {
      done.enter()
      DispatchQueue.global().async {
        for _ in 0..<perProducer {
          loop.perform { ran.add(1, ordering: .relaxed) }
          queued.add(1, ordering: .relaxed)
        }
        done.leave()
      }
    }
    // The queue fills to the limit; producers then wait instead of adding.
    #expect(eventually(10) { loop.queuedPerformRequests == 1_000 })
    usleep(100_000)
    #expect(loop.queuedPerformRequests == 1_000)
    #expect(queued.load(ordering: .relaxed) == 1_000)
    #expect(ran.load(ordering: .relaxed) == 0)
    gate.signal()
    #expect(done.wait(timeout: .now() + 30) == .success)
    #expect(eventually(30) { ran.load(ordering: .relaxed) == producers * perProducer })
    #expect(ran.load(ordering: .relaxed) == producers * perProducer)
    #expect(loop.performQueueHighWater == 1_000)
  }

  @Test func performBeforeADeadlineThrowsQueueFullWhenNoRoomComes() throws {
    let gate = DispatchSemaphore(value: 0)
    let thread = try heldLoop(limit: 10, gate: gate)
    defer { stopLoopThread(thread) }
    let loop = thread.runLoop
    let ran = Atomic<Int>(0)
    for _ in 0..<10 {
      try loop.perform(before: .now + .seconds(5)) { ran.add(1, ordering: .relaxed) }
    }
    do {
      try loop.perform(before: .now + .milliseconds(50)) { ran.add(100, ordering: .relaxed) }
      Issue.record("a full queue took the request")
    } catch {
      #expect(error.code == RunLoopError.Code("queueFull"))
    }
    // performAndWait waits for room up to its deadline, then times out.
    #expect(throws: RunLoopError.timedOut("")) {
      try loop.performAndWait(deadline: .now + .milliseconds(50)) {}
    }
    #expect(loop.queuedPerformRequests == 10)
    gate.signal()
    #expect(eventually(10) { ran.load(ordering: .relaxed) == 10 })
    usleep(50_000)
    // The refused request never ran.
    #expect(ran.load(ordering: .relaxed) == 10)
  }

  // A producer waiting for room gets in as soon as a batch is drained, and raising the limit
  // lets it in at once.
  @Test func raisingTheLimitLetsAWaitingProducerIn() throws {
    let gate = DispatchSemaphore(value: 0)
    let thread = try heldLoop(limit: 2, gate: gate)
    defer {
      gate.signal()
      stopLoopThread(thread)
    }
    let loop = thread.runLoop
    loop.perform {}
    loop.perform {}
    let third = Atomic<Bool>(false)
    DispatchQueue.global().async {
      loop.perform {}
      third.store(true, ordering: .releasing)
    }
    usleep(100_000)
    let early = third.load(ordering: .acquiring)
    #expect(!early)
    loop.performQueueLimit = 3
    #expect(eventually(5) { third.load(ordering: .acquiring) })
    #expect(loop.queuedPerformRequests == 3)
  }

  // The loop's own thread cannot wait for itself: its requests go in over the limit.
  @Test func theLoopsOwnThreadIsNeverMadeToWait() throws {
    let count = try onNewThread("own") { loop -> Int in
      loop.performQueueLimit = 5
      let ran = GuardedState(0)
      for _ in 0..<20 { loop.perform { ran.withLock { $0 += 1 } } }
      #expect(loop.queuedPerformRequests == 20)
      try loop.add(CustomInputSource {}, mode: .default)
      _ = try loop.run(mode: .default, timeout: .milliseconds(10))
      return ran.withLock { $0 }
    }
    #expect(count == 20)
  }

  // A producer waiting on a loop whose thread exits is not left waiting: its request is
  // abandoned, as every request for an exited loop is.
  @Test func aWaitingProducerIsReleasedWhenTheLoopsThreadExits() throws {
    let gate = DispatchSemaphore(value: 0)
    let thread = try heldLoop(limit: 1, gate: gate)
    let loop = thread.runLoop
    loop.perform {}
    let request = GuardedState<PerformRequest?>(nil)
    let returned = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      let made = loop.perform {}
      request.withLock { $0 = made }
      returned.signal()
    }
    usleep(50_000)
    thread.cancel()
    loop.stop()
    gate.signal()
    try thread.join()
    #expect(returned.wait(timeout: .now() + 10) == .success)
    let state = request.withLock { $0?.state }
    #expect(state == .abandoned || state == .finished)
  }
}
