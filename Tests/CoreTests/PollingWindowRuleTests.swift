import Glibc
import Testing

@testable import RunLoopCore

/// The rule that sizes a loop's polling window, step by step (the loop applies it after
/// every sleep that blocked and every poll; `SpinBeforeSleepTests` checks it on real loops).
@Suite("The polling window's rule")
struct PollingWindowRuleTests {
  let limit: Int64 = 40_000

  @Test func shortSleepsOpenTheWindowAtAnEighthAndDoubleItUpToTheLimit() {
    var window = PollingWindow()
    var sizes: [Int64] = []
    for _ in 0..<5 {
      window.adapt(slept: 10_000, limit: limit)
      sizes.append(window.nanoseconds)
    }
    #expect(sizes == [5_000, 10_000, 20_000, 40_000, 40_000])
  }

  @Test func aSleepLongerThanTheLimitShutsTheWindow() {
    var window = PollingWindow()
    for _ in 0..<4 { window.adapt(slept: 1_000, limit: limit) }
    #expect(window.nanoseconds == limit)
    window.adapt(slept: limit + 1, limit: limit)
    #expect(window.nanoseconds == 0)
  }

  @Test func aSleepOfExactlyTheLimitCountsAsShort() {
    var window = PollingWindow()
    window.adapt(slept: limit, limit: limit)
    #expect(window.nanoseconds == limit / 8)
  }

  @Test func pollsThatMostlyCatchWorkKeepTheWindowOpen() {
    var window = PollingWindow()
    for _ in 0..<4 { window.adapt(slept: 1_000, limit: limit) }
    for poll in 0..<(PollingWindow.reviewInterval * 3) { window.pollEnded(caught: poll % 2 == 0) }
    #expect(window.nanoseconds == limit)
    #expect(window.pausedSleeps == 0)
  }

  @Test func pollsThatMostlyMissShutTheWindowForAPauseThatDoublesEachTime() {
    var window = PollingWindow()
    for _ in 0..<4 { window.adapt(slept: 1_000, limit: limit) }
    for poll in 0..<PollingWindow.reviewInterval { window.pollEnded(caught: poll % 4 == 0) }
    #expect(window.nanoseconds == 0)
    #expect(window.pausedSleeps == PollingWindow.firstPause)
    // During the pause, short sleeps do not open the window.
    for _ in 0..<PollingWindow.firstPause {
      window.adapt(slept: 1_000, limit: limit)
      #expect(window.nanoseconds == 0)
    }
    // After it they do; a second failed review pauses twice as long.
    window.adapt(slept: 1_000, limit: limit)
    #expect(window.nanoseconds == limit / 8)
    for _ in 0..<PollingWindow.reviewInterval { window.pollEnded(caught: false) }
    #expect(window.pausedSleeps == 2 * PollingWindow.firstPause)
  }

  @Test func aReviewThatPassesResetsThePauseAndThePauseHasAMaximum() {
    var window = PollingWindow()
    for _ in 0..<20 {
      for _ in 0..<PollingWindow.reviewInterval { window.pollEnded(caught: false) }
    }
    #expect(window.nextPause == PollingWindow.longestPause)
    for _ in 0..<PollingWindow.reviewInterval { window.pollEnded(caught: true) }
    #expect(window.nextPause == PollingWindow.firstPause)
  }
}

/// The process-wide count of polling loops, across a fork.
@Suite("Polling places")
struct PollingSlotTests {
  // The child of a fork has only the forking thread, which was not polling: a count
  // inherited from the parent would hold a polling place for good.
  @Test func aForkedChildStartsWithNoLoopPolling() throws {
    _ = EventRunLoop.current  // installs the fork handler with the first loop
    let slots = 1_000_000
    #expect(takePollingSlot(of: slots))
    defer { releasePollingSlot() }
    let child = fork()
    if child == 0 { _exit(pollingLoops.load(ordering: .relaxed) == 0 ? 0 : 1) }
    try #require(child > 0)
    var status: Int32 = 0
    #expect(waitpid(child, &status, 0) == child)
    #expect(status == 0)
  }

}
