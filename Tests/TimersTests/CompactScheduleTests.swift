import RunLoopCore
import Testing

@testable import RunLoopTimers

/// The compact timer layout: what every timer stores inline, what moves to its extras, and
/// that nothing of the public API is lost on the way.
@Suite("Compact timer schedules")
struct CompactScheduleTests {
  @Test func plainTimersKeepTheirScheduleInlineAndRareFieldsMoveToExtras() throws {
    let oneShot = try LoopTimer(fireAt: .now + .seconds(1)) { _ in }
    let repeating = try LoopTimer(fireAt: .now + .seconds(1), every: .milliseconds(5)) { _ in }
    #expect(!oneShot.hasExtras)
    #expect(!repeating.hasExtras)
    #expect(repeating.interval == .milliseconds(5))
    #expect(oneShot.interval == nil)

    // A tolerance needs the extras; the interval moves there intact.
    repeating.tolerance = .milliseconds(1)
    #expect(repeating.hasExtras)
    #expect(repeating.interval == .milliseconds(5))
    #expect(repeating.tolerance == .milliseconds(1))

    let (inOneMode, inTwoModes) = try onNewThread { loop -> (Bool, Bool) in
      try loop.add(oneShot, mode: .default)
      let inOne = oneShot.hasExtras
      try loop.add(oneShot, mode: "second")
      let inTwo = oneShot.hasExtras
      oneShot.invalidate()
      repeating.invalidate()
      return (inOne, inTwo)
    }
    // Modes never need the extras: a timer in two modes moves to the queue of that pair.
    #expect(!inOneMode)
    #expect(!inTwoModes)
  }

  @Test func datesAndIntervalsThatAreNotWholeNanosecondsKeepTheirExactValues() throws {
    let interval = Duration.milliseconds(3) + Duration(attoseconds: 3)
    let (first, callouts) = try onNewThread {
      loop -> (ContinuousClock.Instant, [LoopRecorder.Callout]) in
      let recorder = LoopRecorder([.activities, .callouts])
      loop.addInstrument(recorder)
      let first = ContinuousClock.now + .milliseconds(5) + Duration(attoseconds: 7)
      let counter = Counter()
      let timer = try LoopTimer(fireAt: first, every: interval, name: "odd") { timer in
        if counter.increment() == 4 { timer.invalidate() }
      }
      #expect(timer.fireDate == first)
      #expect(timer.interval == interval)
      try loop.add(timer, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(5))
      return (first, recorder.timerCallouts)
    }
    #expect(callouts.count == 4)
    for callout in callouts {
      let dueAt = try #require(callout.dueAt)
      // Never before the exact fire date, and every fire date on the exact grid.
      #expect(callout.start >= dueAt)
      #expect((dueAt - first).attoseconds % interval.attoseconds == 0)
      #expect(dueAt >= first)
    }
  }

  @Test func fireDatesBeyondTheNanosecondRangeKeepTheirValueAndNeverFire() throws {
    let (kept, result, fired) = try onNewThread { loop -> (Bool, RunResult, Int) in
      let far = ContinuousClock.now + .seconds(Int64(1) << 40)
      let counter = Counter()
      let timer = try LoopTimer(fireAt: far) { _ in counter.increment() }
      try loop.add(timer, mode: .default)
      let result = try loop.run(mode: .default, timeout: .milliseconds(20))
      let kept = timer.fireDate == far
      timer.invalidate()
      return (kept, result, counter.count)
    }
    #expect(kept)
    #expect(result == .timedOut)
    #expect(fired == 0)
  }

  @Test func timerInManyModesFiresInEachAndLeavesEachCleanly() throws {
    let modes: [LoopMode] = (1...7).map { LoopMode("mode\($0)") }
    let (firedPerMode, afterRemove, consistent, leftAfterInvalidate) = try onNewThread {
      loop -> ([Int], Int, Bool, Int) in
      let counter = Counter()
      let timer = try LoopTimer(fireAt: .now, every: .milliseconds(1), name: "many") { _ in
        counter.increment()
      }
      // Another timer in each mode, so that every heap holds more than this one.
      let others = try modes.map { mode in try keepAlive(loop, mode: mode) }
      try loop.add(timer, modes: modes)
      var fired: [Int] = []
      for mode in modes {
        let before = counter.count
        try loop.run(mode: mode, timeout: .milliseconds(15))
        fired.append(counter.count - before)
      }
      loop.remove(timer, mode: modes[5])
      let before = counter.count
      try loop.run(mode: modes[5], timeout: .milliseconds(15))
      let afterRemove = counter.count - before
      let consistent = heapsAreConsistent(loop)
      timer.invalidate()
      for other in others { other.invalidate() }
      let left = modes.map { scheduledCount(loop, mode: $0) }.reduce(0, +)
      return (fired, afterRemove, consistent, left)
    }
    #expect(firedPerMode.allSatisfy { $0 >= 1 }, "fires per mode: \(firedPerMode)")
    #expect(afterRemove == 0)
    #expect(consistent)
    #expect(leftAfterInvalidate == 0)
  }

  @Test func schedulerIsFreedWithTheLastTimerThatJoinedItAfterItsThreadExits() throws {
    let scheduler = WeakBox()
    let handlerCapture = WeakBox()
    var held: LoopTimer? = try onNewThread { loop -> LoopTimer in
      let capture = Sentinel()
      handlerCapture.set(capture)
      let timer = try LoopTimer(fireAt: .now + .seconds(3600)) { _ in _ = capture }
      try loop.add(timer, mode: .default)
      scheduler.set(try #require(TimerScheduler.existing(of: loop)))
      return timer
    }
    // The thread exited: the scheduler let go of the timer, which is invalid; the timer
    // still refers to its scheduler (its loop's identity), so that stays too.
    #expect(held?.isValid == false)
    #expect(!scheduler.isNil)
    held = nil
    #expect(eventually(2) { scheduler.isNil && handlerCapture.isNil })
  }
}

/// Fire dates below the nanosecond (what seconds given as a `Double` make) are kept exactly
/// in the timer's tagged word, without the extras object.
@Suite("Fire dates below the nanosecond")
struct SubnanosecondDateTests {
  @Test func oneShotDateBelowTheNanosecondStaysExactWithoutExtras() throws {
    let date = ContinuousClock.now + .seconds(1) + Duration(attoseconds: 123_456_789)
    let timer = try LoopTimer(fireAt: date) { _ in }
    #expect(!timer.hasExtras)
    #expect(timer.fireDate == date)
    // Another such date, then a whole-nanosecond one: still exact, still no extras.
    let later = date + .milliseconds(3) + Duration(attoseconds: 5)
    timer.fireDate = later
    #expect(timer.fireDate == later)
    #expect(!timer.hasExtras)
    let whole = ContinuousClock.now + .seconds(2)
    timer.fireDate = whole
    #expect(timer.fireDate == whole)
    #expect(!timer.hasExtras)
  }

  @Test func secondsAsDoubleMakeOneShotTimersWithoutExtras() throws {
    let timer = try LoopTimer(seconds: 0.3) { _ in }
    #expect(!timer.hasExtras)
    let date = ContinuousClock.now + .seconds(0.7)
    let other = try LoopTimer(fireAt: date) { _ in }
    #expect(!other.hasExtras)
    #expect(other.fireDate == date)
  }

  @Test func extrasMadeLaterTakeOverTheDateBelowTheNanosecond() throws {
    let date = ContinuousClock.now + .seconds(5) + Duration(attoseconds: 999_999_999)
    let timer = try LoopTimer(fireAt: date) { _ in }
    timer.tolerance = .milliseconds(1)
    #expect(timer.hasExtras)
    #expect(timer.fireDate == date)
    #expect(timer.tolerance == .milliseconds(1))
  }

  @Test func repeatingTimerWithDateBelowTheNanosecondKeepsItInExtras() throws {
    let date = ContinuousClock.now + .seconds(1) + Duration(attoseconds: 42)
    let timer = try LoopTimer(fireAt: date, every: .milliseconds(10)) { _ in }
    #expect(timer.hasExtras)
    #expect(timer.fireDate == date)
    #expect(timer.interval == .milliseconds(10))
  }

  @Test func timerWithDateBelowTheNanosecondFiresAtItsExactDateNeverBefore() throws {
    let (date, callouts) = try onNewThread {
      loop -> (ContinuousClock.Instant, [LoopRecorder.Callout]) in
      let recorder = LoopRecorder([.activities, .callouts])
      loop.addInstrument(recorder)
      let date = ContinuousClock.now + .milliseconds(5) + Duration(attoseconds: 1)
      let timer = try LoopTimer(fireAt: date, name: "fraction") { _ in }
      try loop.add(timer, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(5))
      return (date, recorder.timerCallouts)
    }
    #expect(callouts.count == 1)
    let callout = try #require(callouts.first)
    #expect(callout.dueAt == date)
    #expect(callout.start >= date)
  }
}
