import CRunLoopLinux
import Dispatch
import Glibc
import Synchronization
import Testing

@testable import RunLoopCore

/// An actor whose every job runs on one executor: a loop, or one of its `LoopExecutor`s.
actor PinnedRecorder {
  nonisolated let unownedExecutor: UnownedSerialExecutor
  private(set) var entries: [String] = []

  init(on loop: EventRunLoop) {
    unownedExecutor = loop.asUnownedSerialExecutor()
  }

  init(on executor: LoopExecutor) {
    unownedExecutor = executor.asUnownedSerialExecutor()
  }

  func record(_ entry: String) -> pid_t {
    entries.append(entry)
    return crl_current_tid()
  }

  /// Records `entry`, runs `loop` nested in `mode` for `duration` (what a modal call-out
  /// does), records `entry` + "-end".
  /// Records `entry`, runs `loop` nested in `mode` (what a modal call-out does) until
  /// `done()` or a minute passed, records `entry` + "-end".
  func recordAroundNestedRun(
    _ entry: String, loop: EventRunLoop, mode: LoopMode, until done: @Sendable () -> Bool,
    during: @Sendable () -> Void
  ) {
    entries.append(entry)
    during()
    let deadline = ContinuousClock.now + .seconds(60)
    while !done(), ContinuousClock.now < deadline {
      _ = try? loop.run(mode: mode, timeout: .milliseconds(10))
    }
    entries.append(entry + "-end")
  }

  func awaitPerformOnOwnLoop(_ loop: EventRunLoop) async throws -> [String] {
    entries.append("before")
    let thread = try await loop.submit { () -> pid_t in crl_current_tid() }
    entries.append(thread == crl_current_tid() ? "request-on-own-thread" : "request-elsewhere")
    entries.append("after")
    return entries
  }
}

@Suite("Loops as executors")
struct LoopExecutorTests {
  @Test func anActorPinnedToALoopRunsEveryJobOnTheLoopsThread() async throws {
    let worker = try startLoopThread(name: "pinned")
    defer { stopLoopThread(worker) }
    let actor = PinnedRecorder(on: worker.runLoop)
    for index in 0..<50 {
      #expect(await actor.record("\(index)") == worker.runLoop.threadID)
    }
    #expect(await actor.entries == (0..<50).map(String.init))
  }

  @Test func aTaskPreferringALoopRunsItsNonisolatedCodeOnTheLoopsThread() async throws {
    let worker = try startLoopThread(name: "preferred")
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    @Sendable nonisolated func threadOfNonisolatedCode() async -> pid_t { crl_current_tid() }
    let fromTask = await Task(executorPreference: loop) { await threadOfNonisolatedCode() }.value
    #expect(fromTask == loop.threadID)
    let fromScope = await withTaskExecutorPreference(loop) { await threadOfNonisolatedCode() }
    #expect(fromScope == loop.threadID)
    let executor = loop.executor(modes: [.default])
    let fromModeExecutor = await withTaskExecutorPreference(executor) {
      await threadOfNonisolatedCode()
    }
    #expect(fromModeExecutor == loop.threadID)
  }

  @Test func askingForTheSameModesReturnsTheSameExecutor() throws {
    let loop = try onNewThread("same-executor") { loop in
      let first = loop.executor(modes: [.default, "tracking"])
      let second = loop.executor(modes: ["tracking", .default])
      let other = loop.executor(modes: ["tracking"])
      #expect(first === second)
      #expect(first !== other)
      #expect(first.loop === loop)
      return loop
    }
    #expect(loop.threadHasExited)
  }

  @Test func jobsAreHeldWhileTheLoopRunsAnotherModeAndRunWhenItReturnsToACommonMode()
    async throws
  {
    let inPrivate = Atomic<Bool>(false)
    let leavePrivate = Atomic<Bool>(false)
    let privateExecutorRan = GuardedState<[String]>([])
    let worker = try startLoopThread(name: "held-jobs") { loop in
      try loop.add(CustomInputSource {}, mode: "private")
      // Runs the loop in "private" (from a request in the default mode) until told to leave.
      loop.perform(inModes: [.default]) {
        inPrivate.store(true, ordering: .releasing)
        while !leavePrivate.load(ordering: .acquiring) {
          _ = try? loop.run(mode: "private", timeout: .milliseconds(10))
        }
      }
    }
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    _ = await eventuallyAsync { inPrivate.load(ordering: .acquiring) }
    let common = PinnedRecorder(on: loop)
    let privateOnly = PinnedRecorder(on: loop.executor(modes: ["private"]))
    let commonDone = Atomic<Bool>(false)
    let commonTask = Task {
      let thread = await common.record("common")
      commonDone.store(true, ordering: .releasing)
      return thread
    }
    // The private mode's executor runs while the loop is in that mode.
    #expect(await privateOnly.record("private") == loop.threadID)
    privateExecutorRan.withLock { $0.append("private") }
    // The common job is queued and held, not lost.
    #expect(await eventuallyAsync { loop.published.jobCount.load(ordering: .relaxed) == 1 })
    try await Task.sleep(for: .milliseconds(30))
    #expect(loop.published.jobCount.load(ordering: .relaxed) == 1)
    #expect(commonDone.load(ordering: .acquiring) == false)
    leavePrivate.store(true, ordering: .releasing)
    #expect(await commonTask.value == loop.threadID)
    #expect(await common.entries == ["common"])
    #expect(privateExecutorRan.withLock { $0 } == ["private"])
  }

  @Test func aNestedRunInsideAnActorMethodHoldsThatActorsJobsUntilTheMethodReturns()
    async throws
  {
    let worker = try startLoopThread(name: "nested-job")
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    let actor = PinnedRecorder(on: loop)
    let other = PinnedRecorder(on: loop.executor(modes: [.default]))
    let innerDone = GuardedState(false)
    let observedInNested = GuardedState<[String]>([])
    let outer = Task {
      // Nested until the other executor's job and the request ran in it and the same
      // actor's second call is queued (held): tasks start on the cooperative pool, which
      // the rest of the suite may keep busy for a while.
      await actor.recordAroundNestedRun(
        "outer", loop: loop, mode: .default,
        until: {
          observedInNested.withLock { $0.count } == 2
            && loop.published.jobCount.load(ordering: .acquiring) >= 1
        }
      ) {
        // From inside the method: another call to the same actor, another executor's call
        // and a perform request, all queued on this loop from other threads.
        Task.detached {
          _ = await actor.record("inner")
          innerDone.withLock { $0 = true }
        }
        Task.detached {
          _ = await other.record("other-executor")
          observedInNested.withLock { $0.append("other-executor") }
        }
        let _: PerformRequest = loop.perform {
          observedInNested.withLock { $0.append("request") }
        }
      }
    }
    await outer.value
    // The other executor's job and the request ran inside the nested run; the same actor's
    // second call waited until the outer method returned.
    #expect(Set(observedInNested.withLock { $0 }) == ["other-executor", "request"])
    #expect(await eventuallyAsync { innerDone.withLock { $0 } })
    #expect(await actor.entries == ["outer", "outer-end", "inner"])
  }

  @Test func atEachBatchTheLoopRunsPerformRequestsBeforeJobs() async throws {
    // A source's handler holds the loop in "private" mode; when it returns, the pass runs
    // the requests and the jobs queued meanwhile (step 4, then the batch after it).
    let inPrivate = Atomic<Bool>(false)
    let leavePrivate = Atomic<Bool>(false)
    let holder = GuardedState<CustomInputSource?>(nil)
    let worker = try startLoopThread(name: "order") { loop in
      try loop.add(CustomInputSource {}, mode: "private")
      let source = CustomInputSource(name: "hold") {
        inPrivate.store(true, ordering: .releasing)
        while !leavePrivate.load(ordering: .acquiring) {
          _ = try? loop.run(mode: "private", timeout: .milliseconds(10))
        }
      }
      try loop.add(source, mode: .default)
      holder.withLock { $0 = source }
    }
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    holder.withLock { $0 }?.signal()
    loop.wakeUp()
    _ = await eventuallyAsync { inPrivate.load(ordering: .acquiring) }
    let order = GuardedState<[String]>([])
    let actor = PinnedRecorder(on: loop)
    // Fire and forget from async code.
    let _: PerformRequest = loop.perform(inModes: [.default]) {
      order.withLock { $0.append("request-1") }
    }
    let job = Task {
      _ = await actor.record("job")
      order.withLock { $0.append("job") }
    }
    #expect(await eventuallyAsync { loop.published.jobCount.load(ordering: .relaxed) == 1 })
    let _: PerformRequest = loop.perform(inModes: [.default]) {
      order.withLock { $0.append("request-2") }
    }
    leavePrivate.store(true, ordering: .releasing)
    await job.value
    #expect(order.withLock { $0 } == ["request-1", "request-2", "job"])
  }

  @Test func aJobEnqueuedFromAnotherThreadWakesASleepingLoop() async throws {
    // The loop sleeps with no timeout: only the job's wake-up can make it run the job.
    let flag = SleepFlag()
    let worker = RunLoopThread(name: "sleeper") { thread in
      let loop = thread.runLoop
      try loop.add(CustomInputSource {}, mode: .default)
      loop.addInstrument(flag)
      while !thread.isCancelled {
        _ = try loop.run(mode: .default, timeout: nil)
      }
    }
    try worker.start()
    defer {
      worker.cancel()
      worker.runLoop.stop()
      try? worker.join()
    }
    #expect(await eventuallyAsync { flag.sleeping.load(ordering: .acquiring) })
    let actor = PinnedRecorder(on: worker.runLoop)
    for round in 0..<20 {
      #expect(await eventuallyAsync { flag.sleeping.load(ordering: .acquiring) })
      #expect(await actor.record("\(round)") == worker.runLoop.threadID)
    }
  }

  @Test func awaitingAPerformOnTheLoopFromItsOwnActorQueuesTheRequestInsteadOfDeadlocking()
    async throws
  {
    let worker = try startLoopThread(name: "own-thread-await")
    defer { stopLoopThread(worker) }
    let actor = PinnedRecorder(on: worker.runLoop)
    let entries = try await actor.awaitPerformOnOwnLoop(worker.runLoop)
    #expect(entries == ["before", "request-on-own-thread", "after"])
  }

  @Test func assumeIsolatedWorksInCodeTheLoopCallsOnItsThread() async throws {
    let worker = try startLoopThread(name: "assume")
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    let actor = PinnedRecorder(on: loop)
    _ = await actor.record("first")
    let seen = try await loop.submit {
      actor.assumeIsolated { isolated in isolated.entries }
    }
    #expect(seen == ["first"])
    let modeExecutor = loop.executor(modes: [.default])
    #expect(try await loop.submit { modeExecutor.isIsolatingCurrentContext() } == true)
    // Off the loop's thread: undecided, so that a failing check reaches checkIsolated().
    #expect(loop.isIsolatingCurrentContext() == nil)
    #expect(modeExecutor.isIsolatingCurrentContext() == nil)
  }

  @Test func jobsAreTracedAsCallOutsOfKindJob() async throws {
    let recorder = LoopRecorder(.callouts)
    let worker = try startLoopThread(name: "traced-jobs") { $0.addInstrument(recorder) }
    defer { stopLoopThread(worker) }
    let actor = PinnedRecorder(on: worker.runLoop)
    let modeActor = PinnedRecorder(on: worker.runLoop.executor(modes: [.default]))
    _ = await actor.record("traced")
    _ = await modeActor.record("traced")
    // The record is made when the call-out returns, which may be after the task resumed.
    #expect(
      await eventuallyAsync {
        recorder.log.contains { $0.hasPrefix("callout:job:loop UnownedJob(id:") }
      })
    #expect(
      await eventuallyAsync {
        recorder.log.contains { $0.hasPrefix("callout:job:executor(default) UnownedJob(id:") }
      })
  }
}

/// Tells whether the loop has announced a sleep and not woken since.
private final class SleepFlag: RunLoopInstrument, Sendable {
  let sleeping = Atomic<Bool>(false)
  var interests: InstrumentInterests { .activities }
  func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    if activity == .beforeWaiting { sleeping.store(true, ordering: .releasing) }
    if activity == .afterWaiting { sleeping.store(false, ordering: .releasing) }
  }
}
