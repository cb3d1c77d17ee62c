import RunLoopCore
import RunLoopTimers
import Testing

@Suite("Tolerance windows coalesce wake-ups")
struct ToleranceTests {
  /// Runs `count` one-shot timers spaced `spacing` apart with `tolerance` each, on a fresh
  /// loop, and returns the loop's wake-ups and the timer call-outs.
  private func run(count: Int, spacing: Duration, tolerance: Duration) throws
    -> (wakeUps: Int, callouts: [LoopRecorder.Callout])
  {
    try onNewThread { loop in
      let recorder = LoopRecorder([.activities, .callouts])
      let base = ContinuousClock.now + .milliseconds(20)
      for index in 0..<count {
        let timer = try LoopTimer(
          fireAt: base + spacing * index, tolerance: tolerance, name: "t\(index)"
        ) { _ in }
        try loop.add(timer, mode: .default)
      }
      loop.addInstrument(recorder)
      // One-shot timers only: the run ends when the last has fired.
      let result = try loop.run(mode: .default, timeout: .seconds(10))
      #expect(result == .finished)
      return (recorder.wakeUps, recorder.timerCallouts)
    }
  }

  @Test func overlappingToleranceWindowsNeedFewerWakeUps() throws {
    let strict = try run(count: 20, spacing: .milliseconds(5), tolerance: .zero)
    let tolerant = try run(count: 20, spacing: .milliseconds(5), tolerance: .milliseconds(200))
    #expect(strict.callouts.count == 20)
    #expect(tolerant.callouts.count == 20)
    // Every window overlaps the first one's end: one wake-up serves all twenty.
    #expect(tolerant.wakeUps <= 2)
    #expect(tolerant.wakeUps < strict.wakeUps)
  }

  @Test func toleranceNeverMakesATimerFireEarlyOrOutOfOrder() throws {
    let tolerant = try run(count: 20, spacing: .milliseconds(3), tolerance: .milliseconds(40))
    #expect(tolerant.callouts.map(\.name) == (0..<20).map { "t\($0)" })
    for callout in tolerant.callouts {
      let due = try #require(callout.dueAt)
      #expect(callout.start >= due)
    }
  }

  @Test func changingTheToleranceReordersWakeUpsNotFireOrder() throws {
    let (names, tolerance) = try onNewThread { loop -> ([String], Duration) in
      let log = EventLog()
      let base = ContinuousClock.now + .milliseconds(10)
      let first = try LoopTimer(fireAt: base, name: "first") { log.append($0.name) }
      let second = try LoopTimer(fireAt: base + .milliseconds(1), name: "second") {
        log.append($0.name)
      }
      try loop.add(first, mode: .default)
      try loop.add(second, mode: .default)
      first.tolerance = .milliseconds(30)
      second.tolerance = .milliseconds(-5)  // negative counts as zero
      try loop.run(mode: .default, timeout: .seconds(5))
      return (log.all, second.tolerance)
    }
    // The second timer's window ends first, so the loop wakes for it; the first is due too
    // by then and fires first, in fire-date order.
    #expect(names == ["first", "second"])
    #expect(tolerance == .zero)
  }

  @Test func repeatingTimersToleranceIsCappedAtHalfItsInterval() throws {
    let timer = try LoopTimer(
      fireAt: .now, every: .milliseconds(10), tolerance: .milliseconds(50)
    ) { _ in }
    #expect(timer.tolerance == .milliseconds(5))
    timer.tolerance = .seconds(1)
    #expect(timer.tolerance == .milliseconds(5))
    timer.tolerance = .milliseconds(2)
    #expect(timer.tolerance == .milliseconds(2))
    let fromSeconds = try LoopTimer(seconds: 0.2, repeats: true, tolerance: 1) { _ in }
    #expect(fromSeconds.tolerance == .milliseconds(100))
    // A one-shot timer has no next fire to protect: no cap.
    let once = try LoopTimer(fireAt: .now, tolerance: .seconds(5)) { _ in }
    #expect(once.tolerance == .seconds(5))
  }

  @Test func toleranceWiderThanTheIntervalDropsNoFires() throws {
    let count = try onNewThread { loop -> Int in
      let counter = Counter()
      let timer = try LoopTimer(
        fireAt: .now + .milliseconds(50), every: .milliseconds(50), tolerance: .milliseconds(250)
      ) { _ in counter.increment() }
      try loop.add(timer, mode: .default)
      try loop.run(mode: .default, timeout: .milliseconds(1000))
      timer.invalidate()
      return counter.count
    }
    // About 20 grid points in a second on an idle loop. With the 250 ms window honoured as
    // given, the loop would wake once per window end and fire about 4 times.
    #expect(count >= 12, "fired \(count) times in 1 s with a 50 ms interval")
  }

  @Test func tolerantTimersOnAnIdleLoopStartInsideTheirWindows() throws {
    let tolerance = Duration.milliseconds(200)
    let callouts = try onNewThread { loop -> [LoopRecorder.Callout] in
      let recorder = LoopRecorder([.activities, .callouts])
      loop.addInstrument(recorder)
      // Windows 400 ms apart: none overlaps another, so each needs its own wake-up.
      let base = ContinuousClock.now + .milliseconds(30)
      for index in 0..<5 {
        let timer = try LoopTimer(
          fireAt: base + .milliseconds(400 * index), tolerance: tolerance, name: "t\(index)"
        ) { _ in }
        try loop.add(timer, mode: .default)
      }
      try loop.run(mode: .default, timeout: .seconds(5))
      return recorder.timerCallouts
    }
    try #require(callouts.count == 5)
    var inside = 0
    for callout in callouts {
      let due = try #require(callout.dueAt)
      #expect(callout.start >= due)
      if callout.start <= due + tolerance { inside += 1 }
    }
    // Waking at the window's end would put every call-out after it. Waking at the fire
    // date leaves the whole window for the wake-up latency; one very late scheduling of
    // this thread on a loaded machine is allowed for.
    let lateness = callouts.map { $0.start - $0.dueAt! }
    #expect(inside >= 4, "\(5 - inside) of 5 started after their window: \(lateness)")
  }
}
