import CRunLoopLinux
import Glibc
import RunLoopCore
import Synchronization
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

  // Each side keeps the ball 50 µs, so that it lands while the other loop polls (the
  // longest limit, 1 ms, opens a window of 125 µs), not while it is still in its pass.
  @Test(.enabled(if: hasTwoCPUs, "needs two CPUs"))
  func loopsWokenAgainAndAgainPollAndCatchTheirWork() throws {
    let pair = try PingPongPair()
    defer { pair.stop() }
    for loop in pair.loops { loop.spinLimit = .milliseconds(1) }
    pair.bounceHeldBursts { pair.loops.contains { $0.spinStatistics.caught > 0 } }
    #expect(pair.loops.contains { $0.spinStatistics.caught > 0 })
    for loop in pair.loops {
      let spins = loop.spinStatistics
      #expect(spins.caught <= spins.spins)
      #expect(spins.spins == 0 || spins.spinTime > .zero)
    }
  }

  // The loop makes its own descriptor ready at "before waiting", just before each sleep:
  // the first sleep then blocks for no time and opens the window, and every poll after it
  // starts with the descriptor ready and nothing else to wake it (no wakeUp() until the
  // last pass). A poll that did not look at descriptors would miss every time.
  //
  // No second thread: a byte bounced between two loop threads through pipes caught nothing
  // whenever another process kept one of the two CPUs busy. The kernel then runs both
  // threads on the other CPU (a pipe's wake-up pulls the woken thread to the writer's CPU),
  // where each poll keeps the very thread it waits for off the CPU; polling then rightly
  // pauses, and the test failed (every run with `taskset -c 1` busy loop beside it).
  @Test(.enabled(if: hasTwoCPUs, "needs two CPUs"))
  func pollingSeesReadyDescriptorsNotOnlyWakeUps() throws {
    let spins = try onNewThread { loop -> LoopSpinStatistics in
      let pipe = Pipe()
      try loop.add(
        DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in _ = pipe.readByte() }, mode: .default)
      // Some other suite's loops may hold the polling places for a while: a few runs.
      for _ in 0..<20 where loop.spinStatistics.spins == 0 {
        let feeder = BeforeWaitingFeeder(pipe, passes: 200)
        loop.addInstrument(feeder)
        defer { loop.removeInstrument(feeder) }
        #expect(try loop.run(mode: .default, timeout: .seconds(10)) == .stopped)
      }
      return loop.spinStatistics
    }
    #expect(spins.spins > 0)
    // Each poll began with the descriptor ready, so each caught it.
    #expect(spins.caught == spins.spins)
  }

  // While a loop polls, a wakeUp() sets the waker's state to woken instead of writing to the
  // eventfd.
  // A signaller that waits (spinning, not sleeping) for each call-out, then 10 µs more,
  // before the next signal keeps the loop's sleeps short, so its window stays open and most
  // wake-ups come as marks: none may be lost, and a stop() made while it polls must end the
  // run. (A wakeUp() that skipped both the mark and the write while the loop polled fails
  // here: the loop then blocks with the signal unseen.)
  // A loop polls only while it holds one of the process's polling places (as many as a
  // thread has CPUs), and other suites' loops, running in parallel, may hold them for a
  // while, or keep both CPUs so busy that every sleep outlasts the window: an attempt in
  // which no poll caught a wake-up says nothing about marks. So the test tries again, up to
  // twenty times, as `loopsWokenAgainAndAgainPollAndCatchTheirWork` does; every attempt
  // still asserts that nothing was lost and that the stop ended the run.
  @Test(.enabled(if: hasTwoCPUs, "needs two CPUs"))
  func wakeUpsAndAStopThatArriveWhileTheLoopPollsAreNotLost() throws {
    var caught: UInt64 = 0
    for _ in 1...20 where caught == 0 {
      let attempt = try signalWhileTheLoopPolls(rounds: 1000)
      #expect(attempt.lost == 0, "a wake-up was lost after \(attempt.performed) call-outs")
      #expect(attempt.result == .stopped)
      caught = attempt.caught
    }
    #expect(caught > 0, "no poll caught a wake-up in twenty attempts")
  }

  /// One attempt of the test above: `rounds` signals, each after the loop's last call-out,
  /// then a stop; what was lost, how the run ended and how many polls caught a wake-up.
  private func signalWhileTheLoopPolls(rounds: Int) throws -> (
    lost: Int, performed: Int, result: RunResult?, caught: UInt64
  ) {
    let performed = Atomic<Int>(0)
    let source = CustomInputSource(name: "job") { performed.add(1, ordering: .releasing) }
    let running = Atomic<Bool>(false)
    let result = GuardedState<RunResult?>(nil)
    let worker = RunLoopThread(name: "poller") { thread in
      try thread.runLoop.add(source, mode: .default)
      // The longest window: on a loaded machine a blocked thread takes longer than the
      // default 50 µs to wake, and those sleeps would close a shorter window.
      thread.runLoop.spinLimit = .milliseconds(1)
      running.store(true, ordering: .releasing)
      let ended = try thread.runLoop.run(mode: .default, timeout: .seconds(60))
      result.withLock { $0 = ended }
    }
    try worker.start()
    while !running.load(ordering: .acquiring) { usleep(100) }
    let loop = worker.runLoop
    var lost = 0
    for round in 1...rounds {
      // A few microseconds after the last call-out: the loop has finished its pass and is
      // polling (well within its 50 µs window), and the wake-up comes as a mark.
      burn(.microseconds(25))
      source.signalAndWakeUp()
      let deadline = ContinuousClock.now + .seconds(5)
      while performed.load(ordering: .acquiring) < round {
        if ContinuousClock.now > deadline {
          lost += 1
          break
        }
      }
      if lost > 0 { break }
    }
    let spins = loop.spinStatistics
    // Right after its last call-out the loop goes back to polling: stop it now.
    loop.stop()
    try worker.join()
    return (lost, performed.load(ordering: .acquiring), result.withLock { $0 }, spins.caught)
  }

  // The same held hops as `loopsWokenAgainAndAgainPollAndCatchTheirWork`, which land while
  // the other loop sleeps, where a loop with a limit polls (an unheld ball lands during the
  // pass, where no loop polls whatever its limit).
  @Test func aSpinLimitOfZeroTurnsPollingOff() throws {
    let pair = try PingPongPair()
    defer { pair.stop() }
    for loop in pair.loops { loop.spinLimit = .zero }
    pair.bounce(500, holdingEachHopFor: .microseconds(50))
    for loop in pair.loops { #expect(loop.spinStatistics.spins == 0) }
  }

  // As above, with the longest limit: a loop whose thread has no other CPU never polls,
  // since the thread that would end its poll could not run meanwhile.
  @Test func loopsOnThreadsRestrictedToOneCPUNeverPoll() throws {
    let pair = try PingPongPair(onOneCPU: true)
    defer { pair.stop() }
    for loop in pair.loops { loop.spinLimit = .milliseconds(1) }
    pair.bounce(500, holdingEachHopFor: .microseconds(50))
    for loop in pair.loops { #expect(loop.spinStatistics.spins == 0) }
  }

  // After a burst of short sleeps the window is open; the first sleep that lasts longer than
  // the limit shuts it, so an idle loop polls at most once after a burst.
  @Test(.enabled(if: hasTwoCPUs, "needs two CPUs"))
  func oneLongSleepShutsThePollingWindow() throws {
    let pair = try PingPongPair()
    defer { pair.stop() }
    for loop in pair.loops { loop.spinLimit = .milliseconds(1) }
    pair.bounceHeldBursts { pair.loops.contains { $0.spinStatistics.spins > 0 } }
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
/// Writes a byte to `pipe` each time its loop is about to sleep, `passes` times; then stops
/// the loop instead.
private final class BeforeWaitingFeeder: RunLoopInstrument {
  let interests: InstrumentInterests = .activities
  private let pipe: Pipe
  private let left: GuardedState<Int>

  init(_ pipe: Pipe, passes: Int) {
    self.pipe = pipe
    self.left = GuardedState(passes)
  }

  func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    guard activity == .beforeWaiting else { return }
    let feed = left.withLock { left -> Bool in
      left -= 1
      return left >= 0
    }
    if feed { pipe.writeByte() } else { loop.stop() }
  }
}
