import RunLoopCore
import RunLoopTimers
import Testing

/// A fire date already in the past when the timer is made: CoreFoundation replaces it with
/// the creation time, and so do we (the same scenarios run against CFRunLoop in
/// `Tests/ParityTests/PastFireDateParityTests.swift`).
@Suite("Timers made with a past fire date")
struct PastFireDateTests {
  @Test func timerMadeWithAPastDateIsScheduledAtItsCreation() throws {
    let before = ContinuousClock.now
    let timer = try LoopTimer(fireAt: before - .seconds(5)) { _ in }
    let after = ContinuousClock.now
    #expect(timer.fireDate >= before)
    #expect(timer.fireDate <= after)
    // A date in the future is kept as given.
    let future = ContinuousClock.now + .seconds(5)
    #expect(try LoopTimer(fireAt: future) { _ in }.fireDate == future)
  }

  @Test func repeatingTimerMadeWithAPastDateHasItsGridFromItsCreation() throws {
    let interval = Duration.milliseconds(30)
    let (before, after, dues) = try onNewThread {
      loop -> (ContinuousClock.Instant, ContinuousClock.Instant, [ContinuousClock.Instant]) in
      let recorder = LoopRecorder([.activities, .callouts])
      loop.addInstrument(recorder)
      let counter = Counter()
      let before = ContinuousClock.now
      // Off the grid that would start at creation: a grid kept from this date would put
      // every fire date 15 ms away from the creation grid.
      let timer = try LoopTimer(
        fireAt: before - .seconds(1) - .milliseconds(15), every: interval, name: "grid"
      ) { timer in
        if counter.increment() == 3 { timer.invalidate() }
      }
      let after = ContinuousClock.now
      try loop.add(timer, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(10))
      return (before, after, recorder.timerCallouts.compactMap(\.dueAt))
    }
    try #require(dues.count == 3)
    #expect(dues[0] >= before)
    #expect(dues[0] <= after)
    for due in dues.dropFirst() {
      // On the grid that starts at the first fire date (a loaded machine may skip points).
      #expect((due - dues[0]).attoseconds % interval.attoseconds == 0)
      #expect(due > dues[0])
    }
  }

  @Test func timersMadeWithEqualPastDatesFireInCreationOrderWhateverTheAddOrder() throws {
    let order = try onNewThread { loop -> [String] in
      let log = EventLog()
      let past = ContinuousClock.now - .seconds(1)
      let timers = try ["a", "b", "c"].map { name in
        try LoopTimer(fireAt: past, name: name) { log.append($0.name) }
      }
      for index in [2, 0, 1] { try loop.add(timers[index], mode: .default) }
      try loop.run(mode: .default, timeout: .seconds(5))
      return log.all
    }
    #expect(order == ["a", "b", "c"])
  }

  @Test func timerMadeLaterWithAnEarlierPastDateFiresAfterTheOlderTimer() throws {
    let order = try onNewThread { loop -> [String] in
      let log = EventLog()
      let now = ContinuousClock.now
      let older = try LoopTimer(fireAt: now - .seconds(1), name: "older") { log.append($0.name) }
      let newer = try LoopTimer(fireAt: now - .seconds(2), name: "newer") { log.append($0.name) }
      try loop.add(newer, mode: .default)
      try loop.add(older, mode: .default)
      try loop.run(mode: .default, timeout: .seconds(5))
      return log.all
    }
    #expect(order == ["older", "newer"])
  }

  @Test func dateSetInThePastIsKeptAndOrdersByDate() throws {
    // Where we differ from CoreFoundation (which replaces a past date set later with the
    // time it is set): a date set through `fireDate` is kept, so timers moved into the past
    // fire in date order.
    let order = try onNewThread { loop -> [String] in
      let log = EventLog()
      let now = ContinuousClock.now
      let first = try LoopTimer(fireAt: now + .seconds(60), name: "first") { log.append($0.name) }
      let second = try LoopTimer(fireAt: now + .seconds(60), name: "second") {
        log.append($0.name)
      }
      try loop.add(first, mode: .default)
      try loop.add(second, mode: .default)
      first.fireDate = now - .seconds(1)
      second.fireDate = now - .seconds(2)
      #expect(second.fireDate == now - .seconds(2))
      try loop.run(mode: .default, timeout: .seconds(5))
      return log.all
    }
    #expect(order == ["second", "first"])
  }
}
