import CRunLoopLinux
import Dispatch
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

/// Two loop threads bouncing work: by default a perform request, each side performing the
/// next hop on the other's loop.
private final class PingPongPair: Sendable {
  let threads: [RunLoopThread]
  var loops: [EventRunLoop] { threads.map(\.runLoop) }
  private let ball = Ball()

  /// Counts the ball's arrivals at A and tells the waiting test when the last one came.
  private final class Ball: Sendable {
    let remaining = GuardedState(0)
    let finished = DispatchSemaphore(value: 0)

    /// Returns whether the ball goes round again.
    func arrivedAtA() -> Bool {
      let left = remaining.withLock { count -> Int in
        count -= 1
        return count
      }
      if left == 0 { finished.signal() }
      return left > 0
    }
  }

  /// `setUpA` and `setUpB` add what bounces instead of perform requests; each gets a
  /// function to call on every arrival at A, which returns whether to go on.
  init(
    onOneCPU: Bool = false,
    setUpA: (@Sendable (EventRunLoop, @escaping @Sendable () -> Bool) throws -> Void)? = nil,
    setUpB: (@Sendable (EventRunLoop, @escaping @Sendable () -> Bool) throws -> Void)? = nil
  ) throws {
    let ready = DispatchSemaphore(value: 0)
    let ball = ball
    threads = [("ping", setUpA), ("pong", setUpB)].map { name, setUp in
      RunLoopThread(name: name) { thread in
        if onOneCPU { precondition(crl_run_on_cpu(0) == 0) }
        try thread.runLoop.add(CustomInputSource {}, mode: .default)
        try setUp?(thread.runLoop, ball.arrivedAtA)
        ready.signal()
        while !thread.isCancelled {
          _ = try thread.runLoop.run(mode: .default, timeout: .seconds(1))
        }
      }
    }
    for thread in threads { try thread.start() }
    for _ in threads { ready.wait() }
  }

  /// Sends the ball `count` times round (with perform requests unless `serve` starts a
  /// ball of another kind) and waits until it is back.
  func bounce(_ count: Int, serve: (() -> Void)? = nil) {
    ball.remaining.withLock { $0 = count }
    if let serve { serve() } else { loops[1].perform { self.atB() } }
    ball.finished.wait()
  }

  private func atB() {
    loops[0].perform {
      if self.ball.arrivedAtA() { self.loops[1].perform { self.atB() } }
    }
  }

  func stop() {
    for thread in threads {
      thread.cancel()
      thread.runLoop.stop()
    }
    for thread in threads { try? thread.join() }
  }
}
