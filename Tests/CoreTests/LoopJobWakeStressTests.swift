import Dispatch
import Glibc
import RunLoopCore
import Synchronization
import Testing

/// How the loop's thread runs its loop while jobs come from other threads.
enum RunPattern: String, CaseIterable, Sendable {
  /// Long runs that end only when a job signals the loop's "end-run" source.
  case sleeping
  /// Before each long run: zero-timeout runs and a pause with no run active.
  case zeroTimeoutRunsAndGapsBetweenRuns
  /// As above, and every other job queues a perform request that runs the loop nested (zero
  /// timeout in the same mode, or briefly in a private mode).
  case nestedRunsInPerformRequests
}

/// Jobs of a task that prefers a loop, each resumed from a Dispatch thread at any moment of
/// the loop's life: while it sleeps, between runs, in zero-timeout or nested runs. None may
/// wait for a wake-up that never comes. The loop's runs are long (30 s) and nothing else
/// wakes it, so a lost wake-up shows as a stall, which a watchdog counts (and ends with a
/// wake-up of its own, so that the test finishes).
@Suite(
  "Jobs resumed from other threads under every kind of run", .serialized,
  .enabled(if: getenv("RUNLOOP_STRESS") != nil, "a stress test: RUNLOOP_STRESS=1 runs it"))
struct LoopJobWakeStressTests {
  @Test(arguments: RunPattern.allCases)
  func everyJobResumedFromAnotherThreadRunsWithoutAnExtraWakeUp(pattern: RunPattern) async throws {
    let rounds = 3000
    let progress = Atomic<Int>(0)
    // Rounds whose continuation was resumed: a stall with the round resumed is a job that
    // waits on the loop; one without is the resuming thread late (a loaded machine).
    let resumed = Atomic<Int>(0)
    let stalls = Atomic<Int>(0)
    let lateResumes = Atomic<Int>(0)
    let endRun = GuardedState<CustomInputSource?>(nil)
    let worker = RunLoopThread(name: "job-wake-\(pattern.rawValue)") { thread in
      let loop = thread.runLoop
      loop.spinLimit = .zero
      let source = CustomInputSource(name: "end-run") {}
      try loop.add(source, mode: .default)
      endRun.withLock { $0 = source }
      var turn = 0
      while !thread.isCancelled {
        turn &+= 1
        if pattern != .sleeping {
          for _ in 0..<(turn % 3) { _ = try loop.run(mode: .default, timeout: .zero) }
          if turn % 2 == 0 { usleep(UInt32(turn % 50)) }
        }
        _ = try loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
      }
    }
    try worker.start()
    while endRun.withLock({ $0 }) == nil { usleep(100) }
    let loop = worker.runLoop
    let source = endRun.withLock { $0! }
    let watchdog = RunLoopThread(name: "job-wake-watchdog") { thread in
      var last = -1
      var still = 0
      while !thread.isCancelled, progress.load(ordering: .relaxed) < rounds {
        usleep(100_000)
        let now = progress.load(ordering: .relaxed)
        if now == last {
          still += 1
          if still == 20 {
            if resumed.load(ordering: .relaxed) > now {
              stalls.add(1, ordering: .relaxed)
            } else {
              lateResumes.add(1, ordering: .relaxed)
            }
            loop.wakeUp()
            still = 0
          }
        } else {
          still = 0
        }
        last = now
      }
    }
    try watchdog.start()
    // A serial queue of its own gets a thread of its own: Dispatch's global queues are the
    // threads every test's tasks share, which synchronous tests can hold for seconds.
    let resumer = DispatchQueue(label: "job-wake-resumer")
    await withTaskExecutorPreference(loop) {
      for round in 0..<rounds {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
          resumer.async {
            resumed.add(1, ordering: .relaxed)
            continuation.resume()
          }
        }
        #expect(loop.isCurrent)
        if pattern == .nestedRunsInPerformRequests, round % 2 == 0 {
          let nestedMode: LoopMode = round % 4 == 0 ? .default : "private"
          let _: PerformRequest = loop.perform(inModes: [.default]) {
            _ = try? loop.run(
              mode: nestedMode, timeout: nestedMode == .default ? .zero : .milliseconds(1))
          }
        }
        if round % 3 == 0 { source.signal() }
        progress.add(1, ordering: .relaxed)
      }
    }
    watchdog.cancel()
    try await watchdog.join()
    worker.cancel()
    loop.stop()
    loop.wakeUp()
    try await worker.join()
    #expect(stalls.load(ordering: .relaxed) == 0)
    #expect(progress.load(ordering: .relaxed) == rounds)
    if lateResumes.load(ordering: .relaxed) > 0 {
      print(
        "\(pattern): \(lateResumes.load(ordering: .relaxed)) rounds waited 2 s for their resumer")
    }
  }
}

/// Wake-ups taken by a nested run that could not serve what they announced.
@Suite("Wake-ups taken by nested runs")
struct NestedRunWakeUpTests {
  // A perform request runs the loop nested in a private mode; while that run sleeps, another
  // thread queues a request for the default mode, and its wake-up ends the nested run's
  // sleep, which cannot run it. The outer run, with 30 s to go and nothing else to wake it,
  // must still run it once the nested run is over.
  @Test func aRequestWhoseWakeUpANestedRunInAnotherModeTookRunsWhenTheNestedRunEnds() throws {
    let nestedSleeping = Atomic<Bool>(false)
    let ran = Atomic<Bool>(false)
    let worker = RunLoopThread(name: "nested-took-wake") { thread in
      let loop = thread.runLoop
      loop.spinLimit = .zero
      try loop.add(CustomInputSource {}, mode: .default)
      try loop.add(CustomInputSource {}, mode: "private")
      while !thread.isCancelled {
        _ = try loop.run(mode: .default, timeout: .seconds(30))
      }
    }
    try worker.start()
    let loop = worker.runLoop
    let _: PerformRequest = loop.perform(inModes: [.default]) {
      nestedSleeping.store(true, ordering: .releasing)
      _ = try? loop.run(mode: "private", timeout: .milliseconds(300))
    }
    while !nestedSleeping.load(ordering: .acquiring) { usleep(100) }
    usleep(50_000)
    let _: PerformRequest = loop.perform(inModes: [.default]) {
      ran.store(true, ordering: .releasing)
    }
    let deadline = ContinuousClock.now + .seconds(5)
    while !ran.load(ordering: .acquiring), ContinuousClock.now < deadline { usleep(1000) }
    let ranInTime = ran.load(ordering: .acquiring)
    worker.cancel()
    loop.stop()
    try worker.join()
    #expect(ranInTime)
  }
}
