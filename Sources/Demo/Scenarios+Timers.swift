import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTimers
import Synchronization

extension Scenarios {
  /// Whether `instant` lies on the grid `start + k * step` (exactly: Duration is integral).
  static func onGrid(
    _ instant: ContinuousClock.Instant, from start: ContinuousClock.Instant, step: Duration
  )
    -> Bool
  {
    let offset = instant - start
    return offset > .zero && (offset / step).rounded() == offset / step
  }

  static let timersGrid = Scenario(
    name: "timers-grid",
    title: "A repeating timer stays on its grid: a late fire does not move the next ones",
    guide: "Run Loops > Timer Sources",
    article: "TimerSources.md, One-shot and repeating timers, and the grid"
  ) { narration in
    let loop = EventRunLoop.current
    let start = ContinuousClock.now
    let step: Duration = .milliseconds(100)
    let fires = GuardedState<[(due: ContinuousClock.Instant, at: Double)]>([])
    let timer = try LoopTimer(fireAt: start + step, every: step, name: "grid") { timer in
      let offset = since(start)
      // In its call-out a repeating timer's fireDate is still the date this fire was due at
      // (as in CoreFoundation); the next one is computed when the call-out returns.
      let due = timer.fireDate
      let count = fires.withLock { list -> Int in
        list.append((due, offset))
        return list.count
      }
      let dueAt = DurationArgument(due - start).seconds * 1000
      narration.event(
        "fire \(count) due at \(one(dueAt)) ms, ran at \(one(offset)) ms (late \(one(offset - dueAt)) ms)"
      )
      if count == 6 { timer.invalidate() }
    }
    // Other work that holds the loop: a one-shot timer whose handler works 140 ms.
    let busy = try LoopTimer(fireAt: start + .milliseconds(310), name: "busy") { _ in
      narration.event("busy handler starts at \(one(since(start))) ms and works 140 ms")
      usleep(140_000)
    }
    try loop.add(timer, mode: .default)
    try loop.add(busy, mode: .default)
    narration.say("A timer every 100 ms; another handler holds the loop from 310 ms for 140 ms,")
    narration.say("so the 4th fire (due at 400 ms) can only run at about 450 ms.")
    _ = try loop.run(mode: .default, timeout: .seconds(3))
    timer.invalidate()
    let fired = fires.withLock { $0 }
    narration.expect(fired.count == 6, "it fired 6 times")
    guard fired.count == 6 else { return }
    let dueTimes = fired.map { DurationArgument($0.due - start).seconds * 1000 }
    narration.expect(
      fired[3].at - dueTimes[3] >= 40,
      "the 4th fire ran \(one(fired[3].at - dueTimes[3])) ms after its due time: a late fire")
    narration.expect(
      fired.allSatisfy { onGrid($0.due, from: start, step: step) },
      "every fire was due at start + k x 100 ms: the 5th was due at \(one(dueTimes[4])) ms,"
        + " not 100 ms after the late fire")
    narration.expect(
      zip(fired, dueTimes).allSatisfy { $0.0.at >= $0.1 }, "no fire came before its due time")
  }

  static let timersOverrun = Scenario(
    name: "timers-overrun",
    title: "A handler that overruns its period: the next fire is the next grid point after it",
    guide: "Run Loops > Timer Sources (a repeating timer reschedules on its original schedule)",
    article: "TimerSources.md, One-shot and repeating timers, and the grid"
  ) { narration in
    let loop = EventRunLoop.current
    let start = ContinuousClock.now
    let step: Duration = .milliseconds(50)
    let fires = GuardedState<[(at: Double, due: ContinuousClock.Instant)]>([])
    let timer = try LoopTimer(fireAt: start + step, every: step, name: "overrun") { timer in
      let offset = since(start)
      let due = timer.fireDate  // the date this fire was due at
      let count = fires.withLock { list -> Int in
        list.append((offset, due))
        return list.count
      }
      narration.event(
        "fire \(count) at \(one(offset)) ms, due at \(one(DurationArgument(due - start).seconds * 1000)) ms"
          + (count == 2 ? "; this handler works 180 ms" : ""))
      if count == 2 { usleep(180_000) }
    }
    try loop.add(timer, mode: .default)
    narration.say("A timer every 50 ms for 500 ms (10 grid points); fire 2 takes 180 ms,")
    narration.say("so about three grid points pass while it works. As in CoreFoundation, the next")
    narration.say("fire date is computed when the handler returns: the first grid point after it.")
    _ = try loop.run(mode: .default, timeout: .milliseconds(520))
    timer.invalidate()
    let fired = fires.withLock { $0 }
    narration.expect(
      fired.count >= 3 && fired.count <= 8,
      "it fired \(fired.count) times, not 10: the missed grid points were not replayed")
    if fired.count >= 3 {
      narration.expect(
        fired[2].at >= 280 && DurationArgument(fired[2].due - start).seconds * 1000 >= 280,
        "the next fire was due at the first grid point after the slow handler returned"
          + " (\(one(DurationArgument(fired[2].due - start).seconds * 1000)) ms), with no catch-up"
          + " fire for the points it missed")
    }
    narration.expect(
      fired.allSatisfy { onGrid($0.due, from: start, step: step) },
      "every fire was due on the 50 ms grid")
  }

  static let timersTolerance = Scenario(
    name: "timers-tolerance",
    title: "Tolerance lets the loop serve several timers with one wake-up",
    guide: "Run Loops > Timer Sources (tolerance)",
    article: "TimerSources.md, Tolerance: fewer wake-ups"
  ) { narration in
    let loop = EventRunLoop.current
    func wakeUps(tolerance: Duration, mode: LoopMode) throws -> (Int, [Double]) {
      let wakes = Atomic<Int>(0)
      let observer = LoopObserver(activities: .afterWaiting, name: "count-wakes") { _, _ in
        wakes.add(1, ordering: .relaxed)
      }
      loop.add(observer, mode: mode)
      defer { observer.invalidate() }
      let start = ContinuousClock.now
      let fired = GuardedState<[Double]>([])
      var timers: [LoopTimer] = []
      for index in 0..<5 {
        let timer = try LoopTimer(
          fireAt: start + .milliseconds(100 + 10 * index), tolerance: tolerance,
          name: "t\(index)"
        ) { _ in
          fired.withLock { $0.append(since(start)) }
        }
        try loop.add(timer, mode: mode)
        timers.append(timer)
      }
      // One-shot timers leave the mode when they fire; an empty mode ends the run.
      _ = try loop.run(mode: mode, timeout: .seconds(2))
      for timer in timers { timer.invalidate() }
      return (wakes.load(ordering: .relaxed), fired.withLock { $0 })
    }
    narration.say("Five one-shot timers due at 100, 110, 120, 130 and 140 ms.")
    let (strict, strictFires) = try wakeUps(tolerance: .zero, mode: "strict")
    narration.event(
      "no tolerance: \(strict) wake-ups, fired at \(strictFires.map(one)) ms", at: .outside)
    let (loose, looseFires) = try wakeUps(tolerance: .milliseconds(50), mode: "loose")
    narration.event(
      "50 ms tolerance: \(loose) wake-ups, fired at \(looseFires.map(one)) ms", at: .outside)
    narration.expect(strictFires.count == 5 && looseFires.count == 5, "all 10 timers fired")
    narration.expect(
      loose < strict && loose <= 2,
      "with tolerance the loop woke \(loose)x instead of \(strict)x: it waited for the last window")
  }
}
