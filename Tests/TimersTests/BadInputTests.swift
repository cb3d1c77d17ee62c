import RunLoopCore
import RunLoopTimers
import Testing

@Suite("Bad input is refused or documented, never a crash or a hang")
struct BadInputTests {
  private let invalidArgument = RunLoopError.invalidArgument("")

  @Test func nanSecondsAndToleranceAreRefused() {
    #expect(throws: invalidArgument) { try LoopTimer(seconds: .nan) { _ in } }
    #expect(throws: invalidArgument) { try LoopTimer(seconds: .nan, repeats: true) { _ in } }
    #expect(throws: invalidArgument) { try LoopTimer(seconds: 1, tolerance: .nan) { _ in } }
    #expect(throws: invalidArgument) { try LoopTimer(seconds: 1, tolerance: .infinity) { _ in } }
  }

  @Test func repeatingTimersNeedAPositiveFiniteInterval() {
    for seconds in [0, -1, -Double.infinity, .infinity, LoopTimer.maximumSeconds * 2] {
      #expect(throws: invalidArgument) { try LoopTimer(seconds: seconds, repeats: true) { _ in } }
    }
    for interval in [Duration.zero, .milliseconds(-5)] {
      #expect(throws: invalidArgument) { try LoopTimer(fireAt: .now, every: interval) { _ in } }
    }
    #expect(throws: invalidArgument) {
      try onNewThread { _ in try LoopTimer.scheduled(after: .zero, every: .zero) { _ in } }
    }
  }

  @Test func negativeAndPastDelaysFireAtTheNextPassNotWhenAdded() throws {
    let (atAdd, afterRun) = try onNewThread { loop -> (Int, Int) in
      let counter = Counter()
      let timers = [
        try LoopTimer(seconds: -3) { _ in counter.increment() },
        try LoopTimer(seconds: -.infinity) { _ in counter.increment() },
        try LoopTimer(fireAt: .now - .seconds(60)) { _ in counter.increment() },
      ]
      for timer in timers { try loop.add(timer, mode: .default) }
      let atAdd = counter.count
      try loop.run(mode: .default, timeout: .zero)
      return (atAdd, counter.count)
    }
    #expect(atAdd == 0)
    #expect(afterRun == 3)
  }

  @Test func infiniteDelayNeverFiresUntilRescheduled() throws {
    let (result, beforeReschedule, afterReschedule) = try onNewThread {
      loop -> (RunResult, Int, Int) in
      let counter = Counter()
      let parked = try LoopTimer(seconds: .infinity) { _ in counter.increment() }
      try loop.add(parked, mode: .default)
      // The parked timer keeps the mode alive but never wakes it.
      let result = try loop.run(mode: .default, timeout: .milliseconds(30))
      let before = counter.count
      parked.fireDate = .now
      try loop.run(mode: .default, timeout: .seconds(5))
      return (result, before, counter.count)
    }
    #expect(result == .timedOut)
    #expect(beforeReschedule == 0)
    #expect(afterReschedule == 1)
  }

  @Test func negativeToleranceCountsAsZero() throws {
    let timer = try LoopTimer(fireAt: .now, tolerance: .seconds(-1)) { _ in }
    #expect(timer.tolerance == .zero)
    timer.tolerance = .milliseconds(-10)
    #expect(timer.tolerance == .zero)
    let fromSeconds = try LoopTimer(seconds: 1, tolerance: -0.5) { _ in }
    #expect(fromSeconds.tolerance == .zero)
  }

  @Test func invalidatedTimerIgnoresEverythingAndCannotBeAdded() throws {
    let counter = Counter()
    let timer = try LoopTimer(fireAt: .now + .seconds(5), every: .seconds(1)) { _ in
      counter.increment()
    }
    let date = timer.fireDate
    timer.invalidate()
    timer.invalidate()
    timer.fireDate = .now
    timer.tolerance = .seconds(1)
    timer.suspend()
    timer.resume()
    timer.fire()
    #expect(!timer.isValid)
    #expect(timer.fireDate == date)
    #expect(timer.tolerance == .zero)
    #expect(!timer.isSuspended)
    #expect(counter.count == 0)
    try onNewThread { loop in
      #expect(throws: RunLoopError.invalidated("")) { try loop.add(timer, mode: .default) }
    }
  }

  @Test func firedOneShotCannotBeAddedAgain() throws {
    try onNewThread { loop in
      let once = try LoopTimer(fireAt: .now) { _ in }
      try loop.add(once, mode: .default)
      try loop.run(mode: .default, timeout: .zero)
      #expect(!once.isValid)
      #expect(throws: RunLoopError.invalidated("")) { try loop.add(once, mode: .default) }
    }
  }

  @Test func resumingARunningTimerAndSuspendingTwiceDoNothing() throws {
    let timer = try LoopTimer(fireAt: .now + .seconds(5)) { _ in }
    let date = timer.fireDate
    timer.resume()
    #expect(timer.fireDate == date)
    #expect(!timer.isSuspended)
    timer.suspend()
    timer.suspend()
    #expect(timer.isSuspended)
    timer.resume()
    #expect(!timer.isSuspended)
    timer.invalidate()
  }

  @Test func addingToAnExitedThreadsLoopIsAnError() throws {
    let loop = try onNewThread { loop in loop }
    let timer = try LoopTimer(fireAt: .now) { _ in }
    #expect(throws: RunLoopError.loopThreadExited("")) { try loop.add(timer, mode: .default) }
    let request = loop.perform(after: .zero) {}
    #expect(!request.isPending)
  }
}
