import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTimers
import Synchronization

extension Scenarios {
  static let timersGrid = Scenario(
    name: "timers-grid", title: "A repeating timer stays on its grid, even after a slow fire",
    guide: "Run Loops > Timer Sources"
  ) { narration in
    let loop = EventRunLoop.current
    let start = ContinuousClock.now
    let offsets = GuardedState<[Double]>([])
    let timer = try LoopTimer(
      fireAt: start + .milliseconds(100), every: .milliseconds(100), name: "grid"
    ) { timer in
      let offset = since(start)
      let count = offsets.withLock { list -> Int in
        list.append(offset)
        return list.count
      }
      narration.event(
        "fire \(count) at \(one(offset)) ms" + (count == 3 ? ", then works 70 ms" : ""))
      if count == 3 { usleep(70_000) }
      if count == 6 { timer.invalidate() }
    }
    try loop.add(timer, mode: .default)
    narration.say("A timer every 100 ms; the handler of its 3rd fire takes 70 ms.")
    _ = try loop.run(mode: .default, timeout: .seconds(2))
    timer.invalidate()
    let fired = offsets.withLock { $0 }
    narration.expect(fired.count == 6, "it fired 6 times")
    let onGrid = fired.enumerated().allSatisfy { index, offset in
      let gridPoint = Double(index + 1) * 100
      return offset >= gridPoint - 1 && offset < gridPoint + 50
    }
    narration.expect(
      onGrid,
      "fire k came at k x 100 ms (within 50 ms): the slow 3rd fire did not shift the 4th to 470 ms")
  }

  static let timersOverrun = Scenario(
    name: "timers-overrun",
    title: "Missed fires of a repeating timer come as one, then it goes back on its grid",
    guide: "Run Loops > Timer Sources (a repeating timer reschedules on its original schedule)"
  ) { narration in
    let loop = EventRunLoop.current
    let start = ContinuousClock.now
    let offsets = GuardedState<[Double]>([])
    let timer = try LoopTimer(
      fireAt: start + .milliseconds(50), every: .milliseconds(50), name: "overrun"
    ) { _ in
      let offset = since(start)
      let count = offsets.withLock { list -> Int in
        list.append(offset)
        return list.count
      }
      narration.event(
        "fire \(count) at \(one(offset)) ms" + (count == 2 ? ", then works 180 ms" : ""))
      if count == 2 { usleep(180_000) }
    }
    try loop.add(timer, mode: .default)
    narration.say("A timer every 50 ms for 500 ms (10 grid points); fire 2 takes 180 ms,")
    narration.say("so the grid points at 150, 200 and 250 ms pass while it works.")
    _ = try loop.run(mode: .default, timeout: .milliseconds(520))
    timer.invalidate()
    let fired = offsets.withLock { $0 }
    narration.expect(
      fired.count >= 4 && fired.count <= 8,
      "it fired \(fired.count) times, not 10: the missed fires were not replayed one by one")
    if fired.count >= 4 {
      let catchUp = fired[2]
      narration.expect(
        catchUp >= 280 && catchUp < 330,
        "the catch-up fire came right after the slow handler (\(one(catchUp)) ms)")
    }
  }

  static let timersTolerance = Scenario(
    name: "timers-tolerance",
    title: "Tolerance lets the loop serve several timers with one wake-up",
    guide: "Run Loops > Timer Sources (tolerance)"
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
      "no tolerance: \(strict) wake-ups, fired at \(strictFires.map(one)) ms")
    let (loose, looseFires) = try wakeUps(tolerance: .milliseconds(50), mode: "loose")
    narration.event(
      "50 ms tolerance: \(loose) wake-ups, fired at \(looseFires.map(one)) ms")
    narration.expect(strictFires.count == 5 && looseFires.count == 5, "all 10 timers fired")
    narration.expect(
      loose < strict && loose <= 2,
      "with tolerance the loop woke \(loose)x instead of \(strict)x: it waited for the last window")
  }
}
