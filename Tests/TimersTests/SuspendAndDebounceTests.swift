import RunLoopCore
import RunLoopTimers
import Testing

/// The workbook's countdown timer, on a run loop: start, pause, resume, stop.
final class Countdown: Sendable {
  private let ticksLeft: GuardedState<Int>
  private let log = EventLog()
  private let timer: LoopTimer

  init(ticks: Int, every interval: Duration, on loop: EventRunLoop) throws {
    let ticksLeft = GuardedState(ticks)
    let log = log
    self.ticksLeft = ticksLeft
    timer = try LoopTimer(fireAt: .now + interval, every: interval, name: "countdown") {
      timer in
      let left = ticksLeft.withLock { left -> Int in
        left -= 1
        return left
      }
      log.append("tick \(left)")
      if left == 0 {
        timer.invalidate()
        log.append("done")
      }
    }
    try loop.add(timer, mode: .default)
  }

  func pause() { timer.suspend() }
  func resume() { timer.resume() }
  func stop() { timer.invalidate() }
  var isPaused: Bool { timer.isSuspended }
  var isStopped: Bool { !timer.isValid }
  var remaining: Int { ticksLeft.withLock { $0 } }
  var events: [String] { log.all }
  var nextTick: ContinuousClock.Instant { timer.fireDate }
}

@Suite("Suspend, resume and debounce")
struct SuspendAndDebounceTests {
  @Test func suspendedTimerDoesNotFireAndResumeKeepsTheRemainingTime() throws {
    let (firedWhileSuspended, remainingBefore, remainingAfter, firedAfter) = try onNewThread {
      loop -> (Int, Duration, Duration, Int) in
      let counter = Counter()
      let alive = try keepAlive(loop, mode: .default)
      let timer = try LoopTimer(fireAt: .now + .milliseconds(1500), every: .seconds(10)) { _ in
        counter.increment()
      }
      try loop.add(timer, mode: .default)
      let suspendedAt = ContinuousClock.now
      timer.suspend()
      let before = timer.fireDate - suspendedAt
      // Longer than the time that was left: a running timer would have fired.
      try loop.run(mode: .default, timeout: .milliseconds(1700))
      let whileSuspended = counter.count
      let resumedAt = ContinuousClock.now
      timer.resume()
      let after = timer.fireDate - resumedAt
      try loop.run(mode: .default, timeout: .seconds(5)) { counter.count == 1 }
      timer.invalidate()
      alive.invalidate()
      return (whileSuspended, before, after, counter.count)
    }
    #expect(firedWhileSuspended == 0)
    #expect(firedAfter == 1)
    // The time left is carried over the pause (loosely: only clock reads separate them).
    let drift =
      remainingAfter > remainingBefore
      ? remainingAfter - remainingBefore : remainingBefore - remainingAfter
    // Loose bounds: a thread held off the CPU between the clock reads widens the gap.
    #expect(drift < .milliseconds(500))
    #expect(remainingAfter > .milliseconds(750))
  }

  @Test func countdownStartPauseResumeStopNeverLosesOrAddsTicks() throws {
    let (events, pausedTicks, remaining) = try onNewThread {
      loop -> ([String], Int, Int) in
      let countdown = try Countdown(ticks: 5, every: .milliseconds(15), on: loop)
      let alive = try keepAlive(loop, mode: .default)
      try loop.run(mode: .default, timeout: .milliseconds(40))  // about two ticks
      countdown.pause()
      let atPause = countdown.events.count
      try loop.run(mode: .default, timeout: .milliseconds(60))
      let pausedTicks = countdown.events.count - atPause
      countdown.resume()
      try loop.run(mode: .default, timeout: .seconds(2)) {
        countdown.remaining == 0
      }
      countdown.stop()  // stopping after the end is harmless
      alive.invalidate()
      return (countdown.events, pausedTicks, countdown.remaining)
    }
    #expect(pausedTicks == 0)
    #expect(events == ["tick 4", "tick 3", "tick 2", "tick 1", "tick 0", "done"])
    #expect(remaining == 0)
  }

  @Test func stoppedCountdownFiresNoMore() throws {
    let (events, stopped) = try onNewThread { loop -> ([String], Bool) in
      let countdown = try Countdown(ticks: 100, every: .milliseconds(5), on: loop)
      let alive = try keepAlive(loop, mode: .default)
      countdown.pause()
      countdown.stop()
      countdown.resume()  // resuming a stopped countdown does nothing
      try loop.run(mode: .default, timeout: .milliseconds(40))
      alive.invalidate()
      return (countdown.events, countdown.isStopped)
    }
    #expect(events.isEmpty)
    #expect(stopped)
  }

  @Test func debounceRunsOnceAfterTheLastCall() throws {
    let (runs, lastCall, ranAt) = try onNewThread {
      loop -> (Int, ContinuousClock.Instant, ContinuousClock.Instant?) in
      let counter = Counter()
      let ranAt = GuardedState<ContinuousClock.Instant?>(nil)
      let search = Debouncer(delay: .milliseconds(100), loop: loop, name: "search") {
        counter.increment()
        ranAt.withLock { $0 = .now }
      }
      let alive = try keepAlive(loop, mode: .default)
      var lastCall = ContinuousClock.now
      for _ in 0..<6 {
        // A keystroke every 10 ms: the 100 ms pause never comes until the last one.
        lastCall = .now
        search.call()
        try loop.run(mode: .default, timeout: .milliseconds(10))
      }
      try loop.run(mode: .default, timeout: .seconds(2)) { counter.count == 1 }
      let pendingAfter = search.isPending
      alive.invalidate()
      #expect(!pendingAfter)
      return (counter.count, lastCall, ranAt.withLock { $0 })
    }
    #expect(runs == 1)
    let ran = try #require(ranAt)
    #expect(ran >= lastCall + .milliseconds(100))
  }

  @Test func debounceCanRunAgainAndCanBeCancelled() throws {
    let runs = try onNewThread { loop -> [Int] in
      let counter = Counter()
      let save = Debouncer(delay: .milliseconds(5), loop: loop) { counter.increment() }
      let alive = try keepAlive(loop, mode: .default)
      save.call()
      try loop.run(mode: .default, timeout: .seconds(2)) { counter.count == 1 }
      let first = counter.count
      save.call()
      try loop.run(mode: .default, timeout: .seconds(2)) { counter.count == 2 }
      let second = counter.count
      save.call()
      save.cancel()
      try loop.run(mode: .default, timeout: .milliseconds(30))
      alive.invalidate()
      return [first, second, counter.count]
    }
    #expect(runs == [1, 2, 2])
  }
}

extension EventRunLoop {
  /// Runs in `mode` until `condition` holds or `timeout` passes, in short slices (a timer
  /// never ends a run by itself).
  func run(mode: LoopMode, timeout: Duration, until condition: () -> Bool) throws {
    let deadline = ContinuousClock.now + timeout
    while !condition(), ContinuousClock.now < deadline {
      try run(mode: mode, timeout: .milliseconds(2))
    }
  }
}
