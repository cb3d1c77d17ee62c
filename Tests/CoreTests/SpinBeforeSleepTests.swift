import CRunLoopLinux
import Glibc
import RunLoopCore
import Testing

/// Polling before sleep: when a loop polls, when it never does, and what it counts.
///
/// Serialized: the tests count polls, and the process lets only as many loops poll at once
/// as a thread has CPUs, so two of these tests running side by side would take each other's
/// places.
@Suite("Polling before sleep", .serialized)
struct SpinBeforeSleepTests {
  static let hasTwoCPUs = crl_allowed_cpu_count() >= 2

  @Test func spinLimitIsClampedToTheRangeZeroToOneMillisecond() throws {
    try onNewThread { loop in
      #expect(loop.spinLimit == EventRunLoop.defaultSpinLimit)
      loop.spinLimit = .microseconds(20)
      #expect(loop.spinLimit == .microseconds(20))
      loop.spinLimit = .milliseconds(-5)
      #expect(loop.spinLimit == .zero)
      loop.spinLimit = .seconds(5)
      #expect(loop.spinLimit == .milliseconds(1))
      loop.spinLimit = .milliseconds(2)
      #expect(loop.spinLimit == .milliseconds(1))
    }
  }

  @Test func newLoopsStartWithTheDefaultSpinLimit() throws {
    #expect(EventRunLoop.defaultSpinLimit == .microseconds(50))
    EventRunLoop.defaultSpinLimit = .microseconds(30)
    defer { EventRunLoop.defaultSpinLimit = .microseconds(50) }
    let limit = try onNewThread { loop in loop.spinLimit }
    #expect(limit == .microseconds(30))
    EventRunLoop.defaultSpinLimit = .seconds(-1)
    #expect(EventRunLoop.defaultSpinLimit == .zero)
  }

  // Every sleep of this loop is a 5 ms timeout, far over the limit: the polling window
  // never opens.
  @Test func aLoopWhoseSleepsAreLongerThanTheLimitNeverPolls() throws {
    let spins = try onNewThread { loop in
      try loop.add(CustomInputSource {}, mode: .default)
      for _ in 0..<20 { _ = try loop.run(mode: .default, timeout: .milliseconds(5)) }
      return loop.spinStatistics
    }
    #expect(spins == LoopSpinStatistics(spins: 0, caught: 0, spinTime: .zero))
  }

  @Test(.enabled(if: hasTwoCPUs, "needs two CPUs"))
  func loopsWokenAgainAndAgainPollAndCatchTheirWork() throws {
    let pair = try PingPongPair()
    defer { pair.stop() }
    // Some other suite's loops may hold the polling places for a while: a few rounds.
    var caught: UInt64 = 0
    for _ in 0..<20 where caught == 0 {
      pair.bounce(2000)
      caught = pair.loops.map(\.spinStatistics.caught).reduce(0, +)
    }
    #expect(caught > 0)
    for loop in pair.loops {
      let spins = loop.spinStatistics
      #expect(spins.caught <= spins.spins)
      #expect(spins.spins == 0 || spins.spinTime > .zero)
    }
  }

  @Test(.enabled(if: hasTwoCPUs, "needs two CPUs"))
  func pollingSeesReadyDescriptorsNotOnlyWakeUps() throws {
    // Two loops bounce a byte through two pipes: what wakes each loop is a descriptor, and
    // nothing ever calls wakeUp().
    let toB = Pipe()
    let toA = Pipe()
    let pair = try PingPongPair(
      setUpA: { loop, bounced in
        try loop.add(
          DescriptorWatch(fileDescriptor: toA.readEnd) { _ in
            guard toA.readByte() else { return }
            if bounced() { toB.writeByte() }
          }, mode: .default)
      },
      setUpB: { loop, _ in
        try loop.add(
          DescriptorWatch(fileDescriptor: toB.readEnd) { _ in
            if toB.readByte() { toA.writeByte() }
          }, mode: .default)
      })
    defer { pair.stop() }
    var caught: UInt64 = 0
    for _ in 0..<20 where caught == 0 {
      pair.bounce(2000) { toB.writeByte() }
      caught = pair.loops.map(\.spinStatistics.caught).reduce(0, +)
    }
    #expect(caught > 0)
  }

  @Test func aSpinLimitOfZeroTurnsPollingOff() throws {
    let pair = try PingPongPair()
    defer { pair.stop() }
    for loop in pair.loops { loop.spinLimit = .zero }
    pair.bounce(3000)
    for loop in pair.loops { #expect(loop.spinStatistics.spins == 0) }
  }

  @Test func loopsOnThreadsRestrictedToOneCPUNeverPoll() throws {
    let pair = try PingPongPair(onOneCPU: true)
    defer { pair.stop() }
    pair.bounce(3000)
    for loop in pair.loops { #expect(loop.spinStatistics.spins == 0) }
  }

  // After a burst of short sleeps the window is open; the first sleep that lasts longer than
  // the limit shuts it, so an idle loop polls at most once after a burst.
  @Test(.enabled(if: hasTwoCPUs, "needs two CPUs"))
  func oneLongSleepShutsThePollingWindow() throws {
    let pair = try PingPongPair()
    defer { pair.stop() }
    for _ in 0..<20 where pair.loops.allSatisfy({ $0.spinStatistics.spins == 0 }) {
      pair.bounce(2000)
    }
    // The window was open: the burst polled.
    #expect(pair.loops.contains { $0.spinStatistics.spins > 0 })
    // Both loops now sleep for good; let each finish its last poll and block.
    usleep(20_000)
    let before = pair.loops.map(\.spinStatistics.spins)
    for _ in 0..<10 {
      // A wake-up every 5 ms: each sleep in between is far longer than the limit.
      for loop in pair.loops { loop.perform {} }
      usleep(5_000)
    }
    let after = pair.loops.map(\.spinStatistics.spins)
    for (spinsBefore, spinsAfter) in zip(before, after) {
      #expect(spinsAfter - spinsBefore <= 1)
    }
  }
}
