import CRunLoopLinux
import Dispatch
import Glibc
import RunLoopCore
import RunLoopTestSupport
import Synchronization
import Testing

@Suite("Awaitable perform requests")
struct AwaitablePerformTests {
  @Test func awaitedPerformReturnsTheClosuresValueComputedOnTheLoopThread() async throws {
    let worker = try startLoopThread(name: "await-value")
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    let (value, thread) = try await loop.submit { (21 * 2, crl_current_tid()) }
    #expect(value == 42)
    #expect(thread == loop.threadID)
  }

  // In async code a fire-and-forget perform with a multi-line closure is a request: the
  // awaitable form has a name of its own (`submit`), so the type checker has no other
  // reading of it.
  @Test func aFireAndForgetPerformInAsyncCodeIsARequestNotAnAwait() async throws {
    let worker = try startLoopThread(name: "await-distinct")
    defer { stopLoopThread(worker) }
    let ran = Atomic<Int>(0)
    let request = worker.runLoop.perform(name: "multi-line") {
      let doubled = 21 * 2
      ran.store(doubled, ordering: .releasing)
    }
    let _: PerformRequest = worker.runLoop.perform(name: "typed") {
      let one = 1
      ran.add(one, ordering: .relaxed)
    }
    #expect(await eventuallyAsync { ran.load(ordering: .acquiring) == 43 })
    #expect(request.state == .finished)
  }

  @Test func awaitedPerformRethrowsTheClosuresError() async throws {
    struct Refused: Error, Equatable { let code: Int }
    let worker = try startLoopThread(name: "await-error")
    defer { stopLoopThread(worker) }
    await #expect(throws: Refused(code: 7)) {
      try await worker.runLoop.submit { () throws -> Int in throw Refused(code: 7) }
    }
  }

  @Test func awaitedPerformsRunInTheOrderTheyWereQueued() async throws {
    let worker = try startLoopThread(name: "await-order")
    defer { stopLoopThread(worker) }
    let order = GuardedState<[Int]>([])
    for index in 0..<20 {
      let seen = try await worker.runLoop.submit {
        order.withLock { $0.append(index) }
        return index
      }
      #expect(seen == index)
    }
    #expect(order.withLock { $0 } == Array(0..<20))
  }

  @Test func cancellingTheAwaitingTaskCancelsARequestThatHasNotStarted() async throws {
    // The loop runs only in "elsewhere", so a request for the default mode stays queued.
    let started = Atomic<Bool>(false)
    let release = Atomic<Bool>(false)
    let worker = RunLoopThread(name: "await-cancel") { thread in
      let loop = thread.runLoop
      try loop.add(CustomInputSource {}, mode: "elsewhere")
      started.store(true, ordering: .releasing)
      while !release.load(ordering: .acquiring) {
        _ = try loop.run(mode: "elsewhere", timeout: .milliseconds(20))
      }
      // Then a run in the default mode: a cancelled request must not run there.
      try loop.add(CustomInputSource {}, mode: .default)
      _ = try loop.run(mode: .default, timeout: .milliseconds(50))
    }
    try worker.start()
    _ = await eventuallyAsync { started.load(ordering: .acquiring) }
    let ran = Atomic<Bool>(false)
    let loop = worker.runLoop
    let task = Task {
      try await loop.submit(inModes: [.default]) { ran.store(true, ordering: .relaxed) }
    }
    try await Task.sleep(for: .milliseconds(30))
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    release.store(true, ordering: .releasing)
    try await worker.join()
    #expect(ran.load(ordering: .relaxed) == false)
  }

  @Test func cancellingTheAwaitingTaskAfterTheClosureStartedStillReturnsItsValue() async throws {
    let worker = try startLoopThread(name: "await-started")
    defer { stopLoopThread(worker) }
    let entered = Atomic<Bool>(false)
    let proceed = DispatchSemaphore(value: 0)
    let task = Task {
      try await worker.runLoop.submit { () -> String in
        entered.store(true, ordering: .releasing)
        // On the loop's thread: blocking it here keeps the request running.
        proceed.wait()
        return "finished"
      }
    }
    #expect(await eventuallyAsync { entered.load(ordering: .acquiring) })
    task.cancel()
    proceed.signal()
    #expect(try await task.value == "finished")
  }

  @Test func aTaskCancelledBeforeItAwaitsNeverRunsTheClosure() async throws {
    let worker = try startLoopThread(name: "await-precancelled")
    defer { stopLoopThread(worker) }
    let ran = Atomic<Bool>(false)
    let task = Task {
      // Cancelled before it asks for the perform.
      _ = await eventuallyAsync { Task.isCancelled }
      return try await worker.runLoop.submit { ran.store(true, ordering: .relaxed) }
    }
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    // A later request on the same loop runs: the cancelled one was skipped, not stuck.
    try await worker.runLoop.submit {}
    #expect(ran.load(ordering: .relaxed) == false)
  }

  @Test func awaitingAPerformOnALoopWhoseThreadExitedFailsAtOnce() async throws {
    let loop = try onNewThread("await-exited") { $0 }
    #expect(loop.threadHasExited)
    await #expect(throws: RunLoopError.loopThreadExited("")) {
      try await loop.submit { 1 }
    }
  }

  @Test func aRequestAbandonedWhenTheThreadExitsResumesItsAwaitingTask() async throws {
    // The thread queues nothing of its own and exits while the request waits for a mode it
    // never runs.
    let exit = DispatchSemaphore(value: 0)
    let ready = Atomic<Bool>(false)
    let worker = RunLoopThread(name: "await-abandoned") { _ in
      ready.store(true, ordering: .releasing)
      // The worker's own thread (not the test's) waits here.
      exit.wait()
    }
    try worker.start()
    _ = await eventuallyAsync { ready.load(ordering: .acquiring) }
    let loop = worker.runLoop
    let task = Task { try await loop.submit(inModes: ["never"]) { 1 } }
    try await Task.sleep(for: .milliseconds(50))
    exit.signal()
    // Joining blocks only for the moment the worker takes to exit.
    try await worker.join()
    await #expect(throws: RunLoopError.loopThreadExited("")) { try await task.value }
  }
}
