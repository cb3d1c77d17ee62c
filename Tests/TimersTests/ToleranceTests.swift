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
      let recorder = LoopRecorder()
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
}
