import Glibc
import RunLoopCore
import Testing

@testable import RunLoopTimers

@Suite("Timers fire when and where they should")
struct TimerFiringTests {
  @Test func firstFireIsAtTheScheduledDateNotWhenAdded() throws {
    let (firedEarly, firedAt, fireDate) = try onNewThread {
      loop -> (Bool, ContinuousClock.Instant?, ContinuousClock.Instant) in
      let firedAt = GuardedState<ContinuousClock.Instant?>(nil)
      let fireDate = ContinuousClock.now + .milliseconds(200)
      let timer = try LoopTimer(fireAt: fireDate, every: .seconds(10)) { _ in
        firedAt.withLock { $0 = .now }
        EventRunLoop.current.stop()
      }
      try loop.add(timer, mode: .default)
      try loop.run(mode: .default, timeout: .zero)
      // A pass made before the fire date must not fire it (checked only when this thread
      // really got there before the fire date).
      let early = ContinuousClock.now < fireDate && firedAt.withLock { $0 } != nil
      try loop.run(mode: .default, timeout: .seconds(5))
      timer.invalidate()
      return (early, firedAt.withLock { $0 }, fireDate)
    }
    #expect(!firedEarly)
    let fired = try #require(firedAt)
    #expect(fired >= fireDate)
  }

  @Test func oneShotFiresOnceIsValidInItsHandlerAndInvalidAfter() throws {
    let (count, validInHandler, validAfter, result) = try onNewThread {
      loop -> (Int, Bool, Bool, RunResult) in
      let counter = Counter()
      let valid = GuardedState(true)
      let timer = try LoopTimer(fireAt: .now + .milliseconds(5)) { timer in
        counter.increment()
        valid.withLock { $0 = timer.isValid }
      }
      try loop.add(timer, mode: .default)
      // The only item is a one-shot timer: once it fires the mode is empty and the run ends.
      let result = try loop.run(mode: .default, timeout: .seconds(5))
      return (counter.count, valid.withLock { $0 }, timer.isValid, result)
    }
    #expect(count == 1)
    // As in CoreFoundation, a one-shot timer is invalidated when its handler returns.
    #expect(validInHandler)
    #expect(!validAfter)
    #expect(result == .finished)
  }

  @Test func timersFireInFireDateOrderAndEqualDeadlinesInInsertionOrder() throws {
    let order = try onNewThread { loop -> [String] in
      let log = EventLog()
      let base = ContinuousClock.now + .milliseconds(20)
      var timers: [LoopTimer] = []
      for (name, offset) in [("c", 2), ("a1", 0), ("b", 1), ("a2", 0), ("a3", 0), ("d", 3)] {
        let timer = try LoopTimer(fireAt: base + .milliseconds(offset), name: name) { timer in
          log.append(timer.name)
        }
        timers.append(timer)
        try loop.add(timer, mode: .default)
      }
      // Rescheduling "c" onto the shared deadline puts it after the others there.
      timers[0].fireDate = base
      try loop.run(mode: .default, timeout: .seconds(5))
      return log.all
    }
    #expect(order == ["a1", "a2", "a3", "c", "b", "d"])
  }

  @Test func repeatingTimerStaysOnItsGridWhenFiredLate() throws {
    let interval = Duration.milliseconds(15)
    let (dues, fireAt) = try onNewThread {
      loop -> ([ContinuousClock.Instant], ContinuousClock.Instant) in
      let recorder = LoopRecorder([.activities, .callouts])
      loop.addInstrument(recorder)
      let count = Counter()
      let fireAt = ContinuousClock.now + .milliseconds(10)
      let timer = try LoopTimer(fireAt: fireAt, every: interval, name: "grid") { _ in
        // Each handler takes a third of the interval: late work must not shift the grid.
        pause(.milliseconds(5))
        if count.increment() == 8 { EventRunLoop.current.stop() }
      }
      try loop.add(timer, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(10))
      timer.invalidate()
      return (recorder.timerCallouts.compactMap(\.dueAt), fireAt)
    }
    #expect(dues.count == 8)
    for (index, due) in dues.enumerated() {
      let steps = (due - fireAt) / interval
      // Exactly on the grid, in increasing order.
      #expect(steps == steps.rounded())
      if index > 0 { #expect(due > dues[index - 1]) }
    }
    #expect(dues.first == fireAt)
  }

  @Test func overrunningHandlerIsFollowedByTheNextGridPointWithoutACatchUpFire() throws {
    let interval = Duration.milliseconds(20)
    let (callouts, fireAt, overrunEnd) = try onNewThread {
      loop -> ([LoopRecorder.Callout], ContinuousClock.Instant, ContinuousClock.Instant) in
      let recorder = LoopRecorder([.activities, .callouts])
      loop.addInstrument(recorder)
      let count = Counter()
      let overrunEnd = GuardedState(ContinuousClock.now)
      let fireAt = ContinuousClock.now + .milliseconds(10)
      let timer = try LoopTimer(fireAt: fireAt, every: interval, name: "overrun") { _ in
        let number = count.increment()
        if number == 2 {
          // Overrun about four grid points.
          pause(.milliseconds(90))
          overrunEnd.withLock { $0 = .now }
        }
        if number == 5 { EventRunLoop.current.stop() }
      }
      try loop.add(timer, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(10))
      timer.invalidate()
      return (recorder.timerCallouts, fireAt, overrunEnd.withLock { $0 })
    }
    #expect(callouts.count == 5)
    let dues = callouts.compactMap(\.dueAt)
    #expect(dues.count == 5)
    // As in CoreFoundation, the next fire date is computed when the handler returns: no fire
    // for a grid point that passed during the overrun, the next one is the first after it.
    let catchUp = callouts.dropFirst(2).filter { $0.dueAt! < overrunEnd }
    #expect(catchUp.isEmpty)
    #expect(dues[2] > overrunEnd)
    #expect(dues[2] - overrunEnd <= interval)
    for (index, due) in dues.enumerated() {
      let steps = (due - fireAt) / interval
      #expect(steps == steps.rounded())
      if index > 0 { #expect(due > dues[index - 1]) }
    }
  }

  @Test func timerDelayedByOtherWorkFiresOnceLateThenReturnsToItsGrid() throws {
    let interval = Duration.milliseconds(20)
    let (callouts, fireAt, blockerEnd) = try onNewThread {
      loop -> ([LoopRecorder.Callout], ContinuousClock.Instant, ContinuousClock.Instant) in
      let recorder = LoopRecorder([.activities, .callouts])
      loop.addInstrument(recorder)
      let count = Counter()
      let blockerEnd = GuardedState(ContinuousClock.now)
      let fireAt = ContinuousClock.now + .milliseconds(20)
      let blocker = try LoopTimer(fireAt: .now + .milliseconds(10), name: "blocker") { _ in
        pause(.milliseconds(90))  // the grid points 20, 40, 60 and 80 ms pass meanwhile
        blockerEnd.withLock { $0 = .now }
      }
      let timer = try LoopTimer(fireAt: fireAt, every: interval, name: "grid") { _ in
        if count.increment() == 3 { EventRunLoop.current.stop() }
      }
      try loop.add(blocker, mode: .default)
      try loop.add(timer, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(10))
      timer.invalidate()
      return (
        recorder.timerCallouts.filter { $0.name == "grid" }, fireAt, blockerEnd.withLock { $0 }
      )
    }
    #expect(callouts.count == 3)
    let dues = callouts.compactMap(\.dueAt)
    // One late fire for its first grid point, then the first grid point after that fire.
    #expect(dues.first == fireAt)
    #expect(dues.count == 3)
    if dues.count == 3 {
      #expect(dues[1] > blockerEnd)
      #expect((dues[1] - fireAt) / interval == ((dues[1] - fireAt) / interval).rounded())
    }
  }

  @Test func nestedRunFromATimersHandlerDoesNotFireThatTimerAgain() throws {
    let (fires, nestedResult, fireCountInNested) = try onNewThread {
      loop -> (Int, RunResult?, Int) in
      let count = Counter()
      let nested = GuardedState<(RunResult?, Int)>((nil, 0))
      let timer = try LoopTimer(fireAt: .now + .milliseconds(5), every: .milliseconds(5)) {
        timer in
        let number = count.increment()
        if number == 1 {
          // The firing timer keeps the mode from being empty but does not fire in here.
          let result = try? loop.run(mode: .default, timeout: .milliseconds(40))
          nested.withLock { $0 = (result, count.count - 1) }
        } else {
          timer.invalidate()
        }
      }
      try loop.add(timer, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(5))
      return (count.count, nested.withLock { $0.0 }, nested.withLock { $0.1 })
    }
    #expect(fireCountInNested == 0)
    #expect(nestedResult == .timedOut)
    #expect(fires == 2)
  }

  @Test func firingOneShotTimerKeepsItsModeFromBeingEmptyInANestedRun() throws {
    let nestedResult = try onNewThread { loop -> RunResult? in
      let nested = GuardedState<RunResult?>(nil)
      let timer = try LoopTimer(fireAt: .now + .milliseconds(5)) { _ in
        nested.withLock { $0 = try? loop.run(mode: .default, timeout: .milliseconds(20)) }
      }
      try loop.add(timer, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(5))
      return nested.withLock { $0 }
    }
    #expect(nestedResult == .timedOut)
  }

  @Test func timerNeverFiresWhileItsLoopIsNotRunning() throws {
    let (whileIdle, afterRun) = try onNewThread { loop -> (Int, Int) in
      let counter = Counter()
      let timer = try LoopTimer(fireAt: .now + .milliseconds(5), every: .milliseconds(5)) { _ in
        counter.increment()
      }
      try loop.add(timer, mode: .default)
      pause(.milliseconds(60))  // the thread is busy, its loop is not running
      let idle = counter.count
      try loop.run(mode: .default, timeout: .zero)
      timer.invalidate()
      return (idle, counter.count)
    }
    #expect(whileIdle == 0)
    // All the missed fires collapse into one.
    #expect(afterRun == 1)
  }

  @Test func timerFiresOnlyInItsModes() throws {
    let (inDefault, inTracking) = try onNewThread { loop -> (Int, Int) in
      let counter = Counter()
      let tracking: LoopMode = "tracking"
      let timer = try LoopTimer(fireAt: .now) { _ in counter.increment() }
      try loop.add(timer, mode: tracking)
      let alive = try keepAlive(loop, mode: .default)
      try loop.run(mode: .default, timeout: .milliseconds(30))
      let inDefault = counter.count
      try loop.run(mode: tracking, timeout: .milliseconds(30))
      alive.invalidate()
      return (inDefault, counter.count)
    }
    #expect(inDefault == 0)
    #expect(inTracking == 1)
  }

  @Test func commonModeTimerJoinsCommonModesAddedLater() throws {
    let (before, after, inDefault) = try onNewThread { loop -> (Int, Int, Int) in
      let tracking: LoopMode = "tracking"
      let counter = Counter()
      let timer = try LoopTimer(fireAt: .now, every: .milliseconds(5)) { _ in
        counter.increment()
      }
      try loop.add(timer, mode: .common)
      let alive = try keepAlive(loop, mode: tracking)
      try loop.run(mode: tracking, timeout: .milliseconds(20))
      let before = counter.count
      loop.addCommonMode(tracking)
      try loop.run(mode: tracking, timeout: .milliseconds(30))
      let after = counter.count
      try loop.run(mode: .default, timeout: .milliseconds(30))
      alive.invalidate()
      timer.invalidate()
      return (before, after, counter.count - after)
    }
    #expect(before == 0)
    #expect(after >= 1)
    #expect(inDefault >= 1)
  }

  @Test func timerDueDuringACalloutFiresOnTheNextPass() throws {
    let callouts = try onNewThread { loop -> [LoopRecorder.Callout] in
      let recorder = LoopRecorder([.activities, .callouts])
      loop.addInstrument(recorder)
      let slow = try LoopTimer(fireAt: .now, name: "slow") { _ in pause(.milliseconds(40)) }
      let follower = try LoopTimer(fireAt: .now + .milliseconds(20), name: "follower") { _ in }
      try loop.add(slow, mode: .default)
      try loop.add(follower, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(5))
      return recorder.timerCallouts
    }
    #expect(callouts.map(\.name) == ["slow", "follower"])
    // When the follower was not yet due as the slow call-out began (the usual case; a
    // thread held off the CPU for 20 ms could find both due at once), it fires in a later
    // pass than the slow one.
    if let followerDue = callouts[1].dueAt, followerDue > callouts[0].start {
      #expect(callouts[1].iteration > callouts[0].iteration)
    }
  }

  @Test func timerRescheduledIntoThePastDuringACalloutFiresOnTheNextPass() throws {
    let callouts = try onNewThread { loop -> [LoopRecorder.Callout] in
      let recorder = LoopRecorder([.activities, .callouts])
      loop.addInstrument(recorder)
      let follower = try LoopTimer(fireAt: .now + .seconds(3600), name: "follower") { _ in }
      let slow = try LoopTimer(fireAt: .now, name: "slow") { _ in
        follower.fireDate = .now - .milliseconds(1)  // due at once, during this call-out
      }
      try loop.add(slow, mode: .default)
      try loop.add(follower, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(5))
      return recorder.timerCallouts
    }
    #expect(callouts.map(\.name) == ["slow", "follower"])
    #expect(callouts[1].iteration > callouts[0].iteration)
  }

  @Test func addingATimerToASecondLoopIsAnError() throws {
    let timer = try LoopTimer(fireAt: .now + .seconds(60)) { _ in }
    // The first loop's thread must still run: once it exits, its timers are invalid.
    let added = GuardedState(false)
    let first = RunLoopThread(name: "first") { thread in
      try thread.runLoop.add(timer, mode: .default)
      try thread.runLoop.add(timer, mode: "other")  // a second mode of the same loop is fine
      added.withLock { $0 = true }
      // Ends when the timer is invalidated below: the mode is then empty.
      try thread.runLoop.run(mode: .default, timeout: .seconds(10))
    }
    try first.start()
    #expect(eventually { added.withLock { $0 } })
    try onNewThread { loop in
      #expect(throws: RunLoopError.alreadyInUse("")) { try loop.add(timer, mode: .default) }
    }
    #expect(timer.runLoop === first.runLoop)
    timer.invalidate()
    try first.join()
  }

  @Test func scheduledConvenienceAddsToTheCurrentLoopsDefaultMode() throws {
    let (inDefault, loopMatches, fired) = try onNewThread { loop -> (Bool, Bool, Int) in
      let counter = Counter()
      let timer = try LoopTimer.scheduled(after: .milliseconds(5)) { _ in counter.increment() }
      let inDefault = loop.contains(timer, mode: .default)
      let matches = timer.runLoop === loop
      try loop.run(mode: .default, timeout: .seconds(5))
      return (inDefault, matches, counter.count)
    }
    #expect(inDefault && loopMatches)
    #expect(fired == 1)
  }

  @Test func manualFireKeepsTheScheduleOfARepeatingTimerAndEndsAOneShot() throws {
    let counter = Counter()
    let repeating = try LoopTimer(fireAt: .now + .seconds(60), every: .seconds(1)) { _ in
      counter.increment()
    }
    let dateBefore = repeating.fireDate
    repeating.fire()
    #expect(counter.count == 1)
    #expect(repeating.isValid)
    #expect(repeating.fireDate == dateBefore)
    let once = try LoopTimer(fireAt: .now + .seconds(60)) { _ in counter.increment() }
    once.fire()
    once.fire()
    #expect(counter.count == 2)
    #expect(!once.isValid)
    repeating.invalidate()
  }

  @Test func removedTimerStopsFiringInThatModeOnly() throws {
    let (afterRemove, inOther) = try onNewThread { loop -> (Int, Int) in
      let counter = Counter()
      let other: LoopMode = "other"
      let timer = try LoopTimer(fireAt: .now, every: .milliseconds(5)) { _ in
        counter.increment()
      }
      try loop.add(timer, modes: [.default, other])
      loop.remove(timer, mode: .default)
      let alive = try keepAlive(loop, mode: .default)
      try loop.run(mode: .default, timeout: .milliseconds(20))
      let afterRemove = counter.count
      try loop.run(mode: other, timeout: .milliseconds(20))
      alive.invalidate()
      timer.invalidate()
      return (afterRemove, counter.count)
    }
    #expect(afterRemove == 0)
    #expect(inOther >= 1)
  }

  @Test func nextGridPointIsExactAndImmediateForAFireDateFarInThePast() throws {
    let done = GuardedState(false)
    let result = GuardedState<(ContinuousClock.Instant, ContinuousClock.Instant)?>(nil)
    let thread = RunLoopThread(name: "grid") { _ in
      let now = ContinuousClock.now
      // A step at a time, this would take about 9e18 steps.
      let far = now - .seconds(Int64.max)
      let next = TimerClock.nextGridPoint(from: far, after: now, interval: .seconds(1))
      result.withLock { $0 = (now, next) }
      done.withLock { $0 = true }
    }
    try thread.start()
    // Joined only once done: a step-by-step walk would never end.
    #expect(eventually(3) { done.withLock { $0 } }, "nextGridPoint still running after 3 s")
    guard done.withLock({ $0 }) else { return }
    try thread.join()
    let (now, next) = try #require(result.withLock { $0 })
    // The fire date is a whole number of seconds before `now`: the next grid point is `now`
    // plus one interval.
    #expect(next == now + .seconds(1))

    // Exact on an awkward grid: 10.5 intervals missed gives the 11th grid point.
    let interval = Duration.nanoseconds(333_333_337)
    let base = ContinuousClock.now
    func gridPoint(after now: ContinuousClock.Instant) -> ContinuousClock.Instant {
      TimerClock.nextGridPoint(from: base, after: now, interval: interval)
    }
    #expect(gridPoint(after: base + interval * 10.5) == base + interval * 11)
    // A time exactly on the grid is not "after" it.
    #expect(gridPoint(after: base + interval * 3) == base + interval * 4)
    #expect(gridPoint(after: base - .seconds(1)) == base + interval)
  }

  @Test func timerRescheduledIntoThePastDuringAPassDoesNotHoldBackDueTimers() throws {
    let callouts = try onNewThread { loop -> [LoopRecorder.Callout] in
      let recorder = LoopRecorder([.activities, .callouts])
      loop.addInstrument(recorder)
      let moved = try LoopTimer(fireAt: .now + .seconds(3600), name: "moved") { _ in }
      let first = try LoopTimer(fireAt: .now - .milliseconds(20), name: "first") { _ in
        // Earlier than "second": it would sit on top of the heap for the rest of the pass.
        moved.fireDate = .now - .milliseconds(30)
      }
      let second = try LoopTimer(fireAt: .now - .milliseconds(10), name: "second") { _ in }
      try loop.add(moved, mode: .default)
      try loop.add(first, mode: .default)
      try loop.add(second, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(2))
      return recorder.timerCallouts
    }
    // "second" was due before the pass began, so it fires in that pass, right after
    // "first"; "moved" was rescheduled during the pass and waits for the next one.
    #expect(callouts.map(\.name) == ["first", "second", "moved"])
    try #require(callouts.count == 3)
    #expect(callouts[0].iteration == callouts[1].iteration)
    #expect(callouts[2].iteration > callouts[1].iteration)
  }
}
