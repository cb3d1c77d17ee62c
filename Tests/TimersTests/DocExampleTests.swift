import RunLoopCore
import RunLoopTimers
import Testing

// The examples of Docs/RunLoopGuide.docc/TimerSources.md, compiled and run here so that the article cannot
// drift from the API.

/// The workbook's countdown: start, pause, resume and stop, one tick per `tick`.
final class CountdownTimer: Sendable {
  enum Status: Sendable, Equatable {
    case ended, running, paused
  }

  private let tick: Duration
  private let onTick: @Sendable (Int) -> Void
  // Guarded by its own lock: the status, the seconds left and the timer.
  private let state = GuardedState((status: Status.ended, left: 0, timer: LoopTimer?.none))

  init(tick: Duration = .seconds(1), onTick: @escaping @Sendable (Int) -> Void) {
    self.tick = tick
    self.onTick = onTick
  }

  var status: Status { state.withLock { $0.status } }

  /// Starts counting down from `ticks` on `loop`; the first tick comes one `tick` from now.
  func start(ticks: Int, on loop: EventRunLoop = .current) throws {
    stop()
    let timer = try LoopTimer(fireAt: .now + tick, every: tick, name: "countdown") {
      [state, onTick] timer in
      let left = state.withLock { state -> Int in
        state.left -= 1
        if state.left <= 0 { state.status = .ended }
        return state.left
      }
      onTick(left)
      if left <= 0 { timer.invalidate() }
    }
    state.withLock { $0 = (.running, ticks, timer) }
    try loop.add(timer, mode: .common)  // keeps ticking in every common mode
  }

  /// Pauses, keeping the time left until the next tick.
  func pause() {
    let timer = state.withLock { state -> LoopTimer? in
      guard state.status == .running else { return nil }
      state.status = .paused
      return state.timer
    }
    timer?.suspend()
  }

  /// Resumes where `pause()` left off.
  func resume() {
    let timer = state.withLock { state -> LoopTimer? in
      guard state.status == .paused else { return nil }
      state.status = .running
      return state.timer
    }
    timer?.resume()
  }

  /// Stops for good.
  func stop() {
    let timer = state.withLock { state -> LoopTimer? in
      defer { state = (.ended, 0, nil) }
      return state.timer
    }
    timer?.invalidate()
  }
}

@Suite("The article's examples")
struct DocExampleTests {
  @Test func listing3_10CreatesAndSchedulesTwoTimers() throws {
    let log = try onNewThread { _ -> [String] in
      let log = EventLog()
      let myDoFireTimer1: @Sendable (LoopTimer) -> Void = { _ in log.append("timer1") }
      let myDoFireTimer2: @Sendable (LoopTimer) -> Void = { _ in log.append("timer2") }

      // Listing 3-10, as in the article (delays shortened tenfold for the test).
      let myRunLoop = EventRunLoop.current

      // Create and schedule the first timer.
      let futureDate = ContinuousClock.now + .milliseconds(100)
      let myTimer = try LoopTimer(
        fireAt: futureDate, every: .milliseconds(10), name: "timer1", myDoFireTimer1)
      try myRunLoop.add(myTimer, mode: .default)

      // Create and schedule the second timer.
      let second = try LoopTimer.scheduled(
        after: .milliseconds(20), every: .milliseconds(20), name: "timer2", myDoFireTimer2)

      try myRunLoop.run(mode: .default, timeout: .milliseconds(150))
      myTimer.invalidate()
      second.invalidate()
      return log.all
    }
    // The second timer starts first; the first one starts after its longer delay.
    #expect(log.first == "timer2")
    #expect(log.contains("timer1"))
  }

  @Test func listing3_11AddsATimerToTheCommonModes() throws {
    let (fires, inTracking) = try onNewThread { _ -> (Int, Int) in
      let counter = Counter()
      let myCFTimerCallback: @Sendable (LoopTimer) -> Void = { _ in counter.increment() }

      // Listing 3-11, as in the article (times shortened tenfold).
      let runLoop = EventRunLoop.current
      let timer = try LoopTimer(
        fireAt: .now + .milliseconds(10), every: .milliseconds(30), name: "myCFTimer",
        myCFTimerCallback)
      try runLoop.add(timer, mode: .common)

      try runLoop.run(mode: .default, timeout: .milliseconds(50))
      let inDefault = counter.count
      runLoop.addCommonMode("tracking")
      try runLoop.run(mode: "tracking", timeout: .milliseconds(70))
      timer.invalidate()
      return (inDefault, counter.count - inDefault)
    }
    #expect(fires >= 1)
    #expect(inTracking >= 1)
  }

  @Test func countdownExampleTicksDownAcrossAPause() throws {
    let (ticks, statusWhilePaused, finalStatus) = try onNewThread {
      loop -> ([Int], CountdownTimer.Status, CountdownTimer.Status) in
      let ticks = GuardedState<[Int]>([])
      let countdown = CountdownTimer(tick: .milliseconds(10)) { left in
        ticks.withLock { $0.append(left) }
      }
      let alive = try keepAlive(loop, mode: .default)  // so that the pause really waits
      try countdown.start(ticks: 4, on: loop)
      try loop.run(mode: .default, timeout: .seconds(2)) { ticks.withLock { $0.count } >= 2 }
      countdown.pause()
      let paused = countdown.status
      let before = ticks.withLock { $0.count }
      try loop.run(mode: .default, timeout: .milliseconds(40))
      #expect(ticks.withLock { $0.count } == before)
      countdown.resume()
      try loop.run(mode: .default, timeout: .seconds(2)) { countdown.status == .ended }
      alive.invalidate()
      return (ticks.withLock { $0 }, paused, countdown.status)
    }
    #expect(ticks == [3, 2, 1, 0])
    #expect(statusWhilePaused == .paused)
    #expect(finalStatus == .ended)
  }
}
