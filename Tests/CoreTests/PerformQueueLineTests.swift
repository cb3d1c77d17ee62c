import Dispatch
import Foundation
import Glibc
import RunLoopCore
import RunLoopTestSupport
import Synchronization
import Testing

/// A full perform queue's line: awaiting tasks suspend (no thread of the Swift concurrency
/// pool waits), tasks and threads wait in one first-come, first-served line, and a loop
/// whose thread exits ends every wait in the line with `loopThreadExited`.
@Suite("The perform queue's line")
struct PerformQueueLineTests {
  /// A loop thread held inside a call-out until `gate` opens, its queue filled to `limit`.
  private func heldFullLoop(limit: Int, gate: DispatchSemaphore) throws -> RunLoopThread {
    let thread = try startLoopThread(name: "line") { loop in loop.performQueueLimit = limit }
    let entered = DispatchSemaphore(value: 0)
    thread.runLoop.perform {
      entered.signal()
      gate.wait()
    }
    entered.wait()
    for _ in 0..<limit { thread.runLoop.perform {} }
    return thread
  }

  @Test func awaitedPerformsOnAFullQueueSuspendWhileATickerKeepsTicking() async throws {
    let gate = DispatchSemaphore(value: 0)
    let thread = try heldFullLoop(limit: 100, gate: gate)
    defer { stopLoopThread(thread) }
    let loop = thread.runLoop
    let ticks = Atomic<Int>(0)
    // Opens the gate if the pool froze (the test could not open it itself then): the
    // expectation below tells that case apart instead of hanging. A frozen pool is one whose
    // ticker has not ticked for 15 s; a slow machine still ticks, so it is never rescued.
    let rescued = Atomic<Bool>(false)
    let openedByTest = Atomic<Bool>(false)
    let rescuer = Thread {
      var last = -1
      var stillSeconds = 0
      while !openedByTest.load(ordering: .acquiring) && stillSeconds < 15 {
        sleep(1)
        let now = ticks.load(ordering: .relaxed)
        stillSeconds = now == last ? stillSeconds + 1 : 0
        last = now
      }
      guard !openedByTest.load(ordering: .acquiring) else { return }
      rescued.store(true, ordering: .releasing)
      gate.signal()
    }
    rescuer.start()
    let ticker = Task {
      while !Task.isCancelled {
        try? await Task.sleep(for: .milliseconds(1))
        ticks.add(1, ordering: .relaxed)
      }
    }
    let ran = GuardedState(0)
    var tasks: [Task<Void, any Error>] = []
    for _ in 0..<300 {
      tasks.append(Task { try await loop.submit { ran.withLock { $0 += 1 } } })
    }
    #expect(await eventuallyAsync { loop.performRequestsWaitingForRoom == 300 })
    let ticksWhileFull = ticks.load(ordering: .relaxed)
    #expect(await eventuallyAsync { ticks.load(ordering: .relaxed) >= ticksWhileFull + 50 })
    #expect(ran.withLock { $0 } == 0)
    #expect(loop.queuedPerformRequests == 100)
    openedByTest.store(true, ordering: .releasing)
    gate.signal()
    for task in tasks { try await task.value }
    ticker.cancel()
    let poolFroze = rescued.load(ordering: .acquiring)
    #expect(!poolFroze)
    #expect(ran.withLock { $0 } == 300)
    #expect(loop.performRequestsWaitingForRoom == 0)
    #expect(loop.performQueueHighWater <= 101)
  }

  @Test func tasksAndThreadsWaitingForRoomEnterInTheOrderTheyCame() async throws {
    let gate = DispatchSemaphore(value: 0)
    let thread = try heldFullLoop(limit: 2, gate: gate)
    defer { stopLoopThread(thread) }
    let loop = thread.runLoop
    let order = GuardedState<[Int]>([])
    let threadsDone = DispatchGroup()
    var tasks: [Task<Void, any Error>] = []
    for index in 0..<40 {
      if index.isMultiple(of: 2) {
        tasks.append(Task { try await loop.submit { order.withLock { $0.append(index) } } })
      } else {
        threadsDone.enter()
        DispatchQueue.global().async {
          loop.perform { order.withLock { $0.append(index) } }
          threadsDone.leave()
        }
      }
      #expect(await eventuallyAsync { loop.performRequestsWaitingForRoom == index + 1 })
    }
    gate.signal()
    for task in tasks { try await task.value }
    #expect(await eventuallyAsync { order.withLock { $0.count } == 40 })
    #expect(order.withLock { $0 } == Array(0..<40))
    #expect(threadsDone.wait(timeout: .now() + 30) == .success)
  }

  @Test func aThreadThatGivesUpWaitingLeavesTheLineAndThrowsQueueFull() throws {
    let gate = DispatchSemaphore(value: 0)
    let thread = try heldFullLoop(limit: 1, gate: gate)
    defer { stopLoopThread(thread) }
    let loop = thread.runLoop
    let ran = Atomic<Int>(0)
    #expect(throws: RunLoopError.self) {
      try loop.perform(before: .now + .milliseconds(50)) { ran.add(1, ordering: .relaxed) }
    }
    #expect(loop.performRequestsWaitingForRoom == 0)
    gate.signal()
    loop.perform { ran.add(10, ordering: .relaxed) }
    #expect(eventually { ran.load(ordering: .relaxed) == 10 })
  }

  @Test func requestsWaitingInTheLineEndWithLoopThreadExitedWhenTheThreadExits() async throws {
    // The loop runs only "elsewhere", so the default-mode requests stay queued and the line
    // stays full until the thread exits.
    let started = Atomic<Bool>(false)
    let exit = Atomic<Bool>(false)
    let worker = RunLoopThread(name: "line-exit") { thread in
      let loop = thread.runLoop
      loop.performQueueLimit = 1
      try loop.add(CustomInputSource {}, mode: "elsewhere")
      started.store(true, ordering: .releasing)
      while !exit.load(ordering: .acquiring) {
        _ = try loop.run(mode: "elsewhere", timeout: .milliseconds(20))
      }
    }
    try worker.start()
    #expect(await eventuallyAsync { started.load(ordering: .acquiring) })
    let loop = worker.runLoop
    let queued = loop.perform(inModes: [.default]) {}
    let ran = GuardedState(0)
    var tasks: [Task<Void, any Error>] = []
    for _ in 0..<5 {
      tasks.append(
        Task { try await loop.submit(inModes: [.default]) { ran.withLock { $0 += 1 } } })
    }
    let blockedThread = DispatchSemaphore(value: 0)
    let threadRequest = GuardedState<PerformRequest?>(nil)
    DispatchQueue.global().async {
      let request = loop.perform(inModes: [.default]) { ran.withLock { $0 += 1 } }
      threadRequest.withLock { $0 = request }
      blockedThread.signal()
    }
    #expect(await eventuallyAsync { loop.performRequestsWaitingForRoom == 6 })
    exit.store(true, ordering: .releasing)
    try await worker.join()
    var exited = 0
    for task in tasks {
      do {
        try await task.value
      } catch let error as RunLoopError where error.code == .loopThreadExited {
        exited += 1
      }
    }
    #expect(exited == 5)
    #expect(blockedThread.wait(timeout: .now() + 30) == .success)
    #expect(threadRequest.withLock { $0?.state } == .abandoned)
    #expect(queued.state == .abandoned)
    #expect(ran.withLock { $0 } == 0)
  }
}
