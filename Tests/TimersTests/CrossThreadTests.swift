import Dispatch
import Glibc
import RunLoopCore
import Synchronization
import Testing

@testable import RunLoopTimers

// Serialized: each race test keeps two threads busy meeting before every round, and several
// at once, beside the rest of the test run, can keep other tests' threads and helper
// processes off the CPU for seconds under ThreadSanitizer.
@Suite("Timers changed from other threads", .serialized)
struct CrossThreadTests {
  @Test func invalidateFromAnotherThreadStopsARepeatingTimer() throws {
    let counter = Counter()
    let timerBox = GuardedState<LoopTimer?>(nil)
    let worker = RunLoopThread(name: "timer-worker") { thread in
      let timer = try LoopTimer(fireAt: .now, every: .milliseconds(2)) { _ in
        counter.increment()
      }
      timerBox.withLock { $0 = timer }
      try thread.runLoop.add(timer, mode: .default)
      // Returns .finished once the only timer is invalidated.
      try thread.runLoop.run(mode: .default, timeout: .seconds(10))
    }
    try worker.start()
    #expect(eventually { counter.count >= 3 })
    let timer = try #require(timerBox.withLock { $0 })
    timer.invalidate()
    let atInvalidate = counter.count
    try worker.join()
    pause(.milliseconds(20))
    #expect(!timer.isValid)
    // A call-out that had already begun may complete; nothing starts after.
    #expect(counter.count - atInvalidate <= 1)
    timer.invalidate()  // twice: nothing happens
    #expect(!timer.isValid)
  }

  // A loop whose run has no timeout and no timer sleeps on its wake word, not in epoll
  // (see `Waker`): a timer added from another thread must wake it, and the loop then
  // sleeps in epoll until the timer's deadline, and fires it.
  @Test func aTimerAddedFromAnotherThreadWakesALoopSleepingOnItsWord() throws {
    let worker = try startLoopThread(name: "word", runTimeout: nil)
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    #expect(eventually { isSleeping(in: futexSystemCall, thread: loop.threadID) })
    let fired = Counter()
    // Far enough out that the loop is seen asleep in epoll before it fires, even loaded.
    let timer = try LoopTimer(fireAt: .now + .seconds(3)) { _ in fired.increment() }
    try loop.add(timer, mode: .default)
    #expect(eventually { isSleeping(in: epollWaitSystemCall, thread: loop.threadID) })
    #expect(fired.count == 0)
    #expect(eventually { fired.count == 1 })
    // With the timer gone, back to the word.
    #expect(eventually { isSleeping(in: futexSystemCall, thread: loop.threadID) })
    #expect(fired.count == 1)
  }

  @Test func rescheduleFromAnotherThreadWakesTheSleepingLoop() throws {
    let fired = Counter()
    let timerBox = GuardedState<LoopTimer?>(nil)
    let result = GuardedState<RunResult?>(nil)
    let worker = RunLoopThread(name: "timer-worker") { thread in
      let timer = try LoopTimer(fireAt: .now + .seconds(3600)) { _ in
        fired.increment()
        EventRunLoop.current.stop()
      }
      try thread.runLoop.add(timer, mode: .default)
      timerBox.withLock { $0 = timer }
      let outcome = try thread.runLoop.run(mode: .default, timeout: .seconds(10))
      result.withLock { $0 = outcome }
    }
    try worker.start()
    #expect(eventually { timerBox.withLock { $0 } != nil })
    pause(.milliseconds(20))  // let the loop go to sleep on the far deadline
    let timer = try #require(timerBox.withLock { $0 })
    timer.fireDate = .now + .milliseconds(10)
    try worker.join()
    #expect(fired.count == 1)
    // Stopped by the handler, long before the ten-second timeout.
    #expect(result.withLock { $0 } == .stopped)
  }

  @Test func addingFromAnotherThreadWakesTheSleepingLoop() throws {
    let fired = Counter()
    let worker = RunLoopThread(name: "timer-worker") { thread in
      let alive = try keepAlive(thread.runLoop, mode: .default)
      try thread.runLoop.run(mode: .default, timeout: .seconds(10))
      alive.invalidate()
    }
    try worker.start()
    pause(.milliseconds(20))
    let timer = try LoopTimer(fireAt: .now + .milliseconds(5)) { _ in
      fired.increment()
      EventRunLoop.current.stop()
    }
    try worker.runLoop.add(timer, mode: .default)
    try worker.join()
    #expect(fired.count == 1)
  }

  @Test func manyThreadsSchedulingAndCancellingKeepTheHeapsConsistent() throws {
    let fired = Counter()
    let result = GuardedState<RunResult?>(nil)
    let worker = RunLoopThread(name: "timer-worker") { thread in
      let alive = try keepAlive(thread.runLoop, mode: .default)
      let outcome = try thread.runLoop.run(mode: .default, timeout: .seconds(20))
      result.withLock { $0 = outcome }
      alive.invalidate()
    }
    try worker.start()
    let loop = worker.runLoop
    let kept = GuardedState(0)
    DispatchQueue.concurrentPerform(iterations: 4) { lane in
      for index in 0..<500 {
        // Far enough ahead that the invalidated ones cannot fire first.
        let due = ContinuousClock.now + .milliseconds(300) + .microseconds(index * 10)
        let timer = try! LoopTimer(fireAt: due) { _ in
          fired.increment()
        }
        try! loop.add(timer, mode: .default)
        switch (index + lane) % 3 {
        case 0: timer.invalidate()
        case 1: timer.fireDate = .now + .milliseconds(1)
        default: timer.tolerance = .microseconds(100)
        }
        if (index + lane) % 3 != 0 { kept.withLock { $0 += 1 } }
      }
    }
    let expected = kept.withLock { $0 }
    #expect(eventually { fired.count == expected })
    // Checked while the loop's thread runs: once it exits, the loop lets go of its timers.
    #expect(heapsAreConsistent(loop))
    loop.stop()
    try worker.join()
    #expect(fired.count == expected)
    // Thousands of cross-thread wake-ups must not swallow the stop (a lost wake-up would
    // leave the loop asleep until its 20-second timeout).
    #expect(result.withLock { $0 } == .stopped)
  }

  /// Runs a loop whose only item is a repeating timer 3 s away, applies `change` to that
  /// timer from this thread, and returns how the run ended and how long it took.
  private func emptyTheModeFromAnotherThread(
    _ change: @escaping @Sendable (LoopTimer, EventRunLoop) -> Void
  ) throws -> (RunResult, Duration) {
    let timerBox = GuardedState<LoopTimer?>(nil)
    let outcome = GuardedState<(RunResult, Duration)?>(nil)
    let worker = RunLoopThread(name: "emptied") { thread in
      // Far enough that a missed wake-up (the run sleeping until the timer's date) cannot be
      // mistaken for a slow machine.
      let timer = try LoopTimer(fireAt: .now + .seconds(30), every: .seconds(30)) { _ in }
      try thread.runLoop.add(timer, mode: .default)
      timerBox.withLock { $0 = timer }
      let start = ContinuousClock.now
      let result = try thread.runLoop.run(mode: .default, timeout: .seconds(60))
      outcome.withLock { $0 = (result, .now - start) }
      timer.invalidate()
    }
    try worker.start()
    #expect(eventually { timerBox.withLock { $0 } != nil })
    // Give the loop time to go to sleep until the timer's date.
    pause(.milliseconds(50))
    change(try #require(timerBox.withLock { $0 }), worker.runLoop)
    try worker.join()
    return try #require(outcome.withLock { $0 })
  }

  @Test func suspendingTheLastTimerFromAnotherThreadEndsTheRun() throws {
    let (result, took) = try emptyTheModeFromAnotherThread { timer, _ in timer.suspend() }
    #expect(result == .finished)
    #expect(took < .seconds(10), "run returned after \(took)")
  }

  @Test func removingTheLastTimerFromAnotherThreadEndsTheRun() throws {
    let (result, took) = try emptyTheModeFromAnotherThread { timer, loop in
      loop.remove(timer, mode: .default)
    }
    #expect(result == .finished)
    #expect(took < .seconds(10), "run returned after \(took)")
  }

  /// Two threads meet before each round, then one applies `first` and the other `second`
  /// to `timers[round]` (given with its round), as near the same moment as they can. A
  /// racer that waits long for the other yields its CPU: with more racers than CPUs (other
  /// tests run at the same time), spinning would only keep the other racer, and every other
  /// test, off the CPU.
  private func race(
    _ timers: [LoopTimer], _ first: @escaping @Sendable (Int, LoopTimer) -> Void,
    _ second: @escaping @Sendable (Int, LoopTimer) -> Void
  ) throws {
    let arrived = Atomic<Int>(0)
    func racer(_ body: @escaping @Sendable (Int, LoopTimer) -> Void) -> RunLoopThread {
      RunLoopThread(name: "racer") { _ in
        for index in timers.indices {
          arrived.wrappingAdd(1, ordering: .sequentiallyConsistent)
          var spins = 0
          while arrived.load(ordering: .sequentiallyConsistent) < 2 * (index + 1) {
            spins += 1
            if spins > 200 { sched_yield() }
          }
          body(index, timers[index])
        }
      }
    }
    let (one, other) = (racer(first), racer(second))
    try one.start()
    try other.start()
    try one.join()
    try other.join()
  }

  @Test func resumeRacingInvalidateLeavesNoInvalidTimerScheduled() throws {
    let rounds = 5_000
    let (stale, finished) = try onNewThread { loop -> (Int, Bool) in
      let timers = try (0..<rounds).map { _ in
        try LoopTimer(fireAt: .now + .seconds(3600)) { _ in }
      }
      for timer in timers {
        try loop.add(timer, mode: .default)
        timer.suspend()
      }
      try race(timers, { $1.resume() }, { $1.invalidate() })
      let stale = scheduledCount(loop, mode: .default)
      let run = try loop.run(mode: .default, timeout: .milliseconds(50))
      return (stale, run == .finished)
    }
    #expect(stale == 0, "\(stale) invalid timers still scheduled after the race")
    #expect(finished, "an invalid timer keeps the mode from being empty")
  }

  // A timer that belongs to no loop yet is changed on one thread while another adds it: the
  // add either comes first (the change then goes through the scheduler's lock) or waits for
  // the change to be complete, so the loop's heaps hold every timer, with the new date and
  // tolerance, never a mix or the old ones.
  @Test func aDetachedTimerChangedWhileAnotherThreadAddsItKeepsTheWholeChange() throws {
    let rounds = 3_000
    let outcome = try onNewThread {
      loop -> (kept: Int, scheduled: Int, tolerant: Int, consistent: Bool, failures: Int) in
      let start = ContinuousClock.now + .seconds(3600)
      let timers = try (0..<rounds).map { _ in try LoopTimer(fireAt: start) { _ in } }
      let dates = (0..<rounds).map { start + .seconds($0 + 1) }
      let failures = Atomic<Int>(0)
      try race(
        timers,
        { index, timer in
          timer.fireDate = dates[index]
          timer.tolerance = .milliseconds(index % 2)
        },
        { _, timer in
          do throws(RunLoopError) {
            try loop.add(timer, mode: .default)
          } catch {
            failures.add(1, ordering: .relaxed)
          }
        })
      let kept = timers.indices.count { index in
        timers[index].fireDate == dates[index]
          && timers[index].tolerance == .milliseconds(index % 2)
      }
      let outcome = (
        kept, scheduledCount(loop, mode: .default), tolerantCount(loop, mode: .default),
        heapsAreConsistent(loop), failures.load(ordering: .relaxed)
      )
      for timer in timers { timer.invalidate() }
      return outcome
    }
    #expect(outcome.failures == 0)
    #expect(outcome.kept == rounds)
    // Every timer is in the heap, the odd ones (with tolerance) counted as tolerant.
    #expect(outcome.scheduled == rounds)
    #expect(outcome.tolerant == rounds / 2)
    #expect(outcome.consistent)
  }

  // An add racing an invalidate: whichever comes first, no invalid timer is left scheduled
  // (an add that came first is undone by the invalidate; one that came later fails).
  @Test func addRacingInvalidateLeavesNoInvalidTimerScheduled() throws {
    let rounds = 5_000
    let (stale, failures) = try onNewThread { loop -> (Int, Set<RunLoopError.Code>) in
      let timers = try (0..<rounds).map { _ in
        try LoopTimer(fireAt: .now + .seconds(3600)) { _ in }
      }
      let failures = GuardedState(Set<RunLoopError.Code>())
      try race(
        timers,
        { _, timer in
          do throws(RunLoopError) {
            try loop.add(timer, mode: .default)
          } catch {
            failures.withLock { _ = $0.insert(error.code) }
          }
        },
        { $1.invalidate() })
      return (scheduledCount(loop, mode: .default), failures.withLock { $0 })
    }
    #expect(stale == 0, "\(stale) invalid timers still scheduled after the race")
    // An add that came too late fails because the timer is invalid, and for no other reason.
    #expect(failures.isSubset(of: [.invalidated]), "\(failures)")
  }
}
