import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTimers
import Synchronization

/// The narrated scenarios (`runloop-demo scenario NAME`). Each one sets up a few sources on
/// real loops and threads, runs them for a fraction of a second, and checks what it claims.
/// Timing claims are loose (this may run on a busy 2-core machine): they check order and
/// counts, not exact times.
enum Scenarios {
  /// A source that is never signalled: it keeps a mode from being empty, so a run in that
  /// mode waits for its timeout instead of returning "finished" at once.
  static func keepAlive(_ name: String) -> CustomInputSource {
    CustomInputSource(name: name) {}
  }

  /// Milliseconds since `start`, for narration.
  static func since(_ start: ContinuousClock.Instant) -> Double {
    DurationArgument(ContinuousClock.now - start).seconds * 1000
  }

  /// `value` with one decimal.
  static func one(_ value: Double) -> String {
    "\((value * 10).rounded() / 10)"
  }

  static let modes = Scenario(
    name: "modes", title: "A run loop only serves the sources of the mode it runs in",
    guide: "Run Loops > Run Loop Modes",
    article: "RunLoopModes.md, A mode filters sources, not events"
  ) { narration in
    let loop = EventRunLoop.current
    let tracking = LoopMode("tracking")
    let fires = Atomic<Int>(0)
    let timer = try LoopTimer(
      fireAt: .now + .milliseconds(50), every: .milliseconds(50), name: "tracking-only"
    ) { _ in
      fires.add(1, ordering: .relaxed)
      narration.event(
        "timer 'tracking-only' fired in mode '\(loop.currentMode?.name ?? "?")'")
    }
    try loop.add(timer, mode: tracking)
    let idle = keepAlive("idle")
    try loop.add(idle, mode: .default)
    defer {
      timer.invalidate()
      idle.invalidate()
    }
    narration.say("A repeating 50 ms timer is added to mode 'tracking' only.")
    narration.say("Run the loop in 'default' for 200 ms:")
    let first = try loop.run(mode: .default, timeout: .milliseconds(200))
    narration.expect(
      fires.load(ordering: .relaxed) == 0,
      "in 'default' the timer never fired; the run ended '\(first)' after its timeout")
    narration.say("Run the same loop in 'tracking' for 200 ms:")
    _ = try loop.run(mode: tracking, timeout: .milliseconds(200))
    let count = fires.load(ordering: .relaxed)
    narration.expect(
      count >= 2, "in 'tracking' it fired \(count) times (the overdue fire first, then on its grid)"
    )
    narration.say("Run in a mode that has nothing in it:")
    let empty = try loop.run(mode: LoopMode("empty"), timeout: .seconds(5))
    narration.expect(
      empty == .finished, "a mode with no sources or timers returns '\(empty)' at once")
  }

  static let commonModes = Scenario(
    name: "common-modes", title: "A source in the common modes runs in every common mode",
    guide: "Run Loops > Run Loop Modes (common modes)",
    article: "RunLoopModes.md, The common modes"
  ) { narration in
    let loop = EventRunLoop.current
    let drag = LoopMode("drag")
    loop.addCommonMode(drag)
    let byMode = GuardedState<[String: Int]>([:])
    let common = try LoopTimer(
      fireAt: .now + .milliseconds(40), every: .milliseconds(40), name: "in-common"
    ) { _ in
      let mode = loop.currentMode?.name ?? "?"
      byMode.withLock { $0["common:" + mode, default: 0] += 1 }
    }
    let defaultOnly = try LoopTimer(
      fireAt: .now + .milliseconds(40), every: .milliseconds(40), name: "default-only"
    ) { _ in
      let mode = loop.currentMode?.name ?? "?"
      byMode.withLock { $0["default-only:" + mode, default: 0] += 1 }
    }
    try loop.add(common, mode: .common)
    try loop.add(defaultOnly, mode: .default)
    defer {
      common.invalidate()
      defaultOnly.invalidate()
    }
    narration.say("'drag' is made a common mode. Timer 'in-common' is added to .common,")
    narration.say(
      "timer 'default-only' to .default. Run 150 ms in 'default', then 150 ms in 'drag'.")
    narration.say("common modes of this loop: \(loop.commonModes.map(\.name).sorted())")
    _ = try loop.run(mode: .default, timeout: .milliseconds(150))
    let idle = keepAlive("idle")
    try loop.add(idle, mode: drag)
    defer { idle.invalidate() }
    let fireBeforeDrag = byMode.withLock { $0["default-only:default"] ?? 0 }
    _ = try loop.run(mode: drag, timeout: .milliseconds(150))
    let counts = byMode.withLock { $0 }
    for (key, value) in counts.sorted(by: { $0.key < $1.key }) {
      narration.event("\(key.replacingFirst(":", with: " fired in '"))': \(value)x", at: .outside)
    }
    narration.expect(
      (counts["common:default"] ?? 0) > 0 && (counts["common:drag"] ?? 0) > 0,
      "'in-common' fired in both 'default' and 'drag'")
    narration.expect(
      (counts["default-only:drag"] ?? 0) == 0 && fireBeforeDrag > 0,
      "'default-only' fired in 'default' only")
  }

  static let customSource = Scenario(
    name: "custom-source",
    title: "A custom input source with a command buffer (Figure 3-2)",
    guide: "Run Loops > Defining a Custom Input Source, Listings 3-3 to 3-9",
    article: "InputSources.md, The guide's example: a command buffer (Figure 3-2)",
    exercise: Exercise(
      setUp: [
        "A worker's loop sleeps with a custom source in its mode. The main thread puts",
        "commands in the source's buffer, signals the source, then wakes the loop.",
      ],
      question: "In which order does the worker's loop report these?",
      events: [
        .init(text: "the source's perform drains the commands", marker: "perform: drained"),
        .init(text: "the loop is woken (step 8)", marker: "woken by wakeUp()"),
        .init(text: "the loop is back at step 2", marker: "back to step 2"),
        .init(text: "the sleep ends, with its length (step 7)", marker: "asleep for"),
      ])
  ) { narration in
    let buffer = GuardedState<[String]>([])
    let performs = Atomic<Int>(0)
    let handled = GuardedState<[String]>([])
    let source = CustomInputSource(
      name: "commands",
      schedule: { _, mode in
        narration.event("schedule: source added in mode '\(mode)'", at: .outside)
      },
      cancel: { _, mode in
        narration.event("cancel: source removed from mode '\(mode)'", at: .outside)
      }
    ) {
      let commands = buffer.withLock { buffer -> [String] in
        defer { buffer.removeAll() }
        return buffer
      }
      performs.add(1, ordering: .relaxed)
      narration.event("perform: drained \(commands.count) commands \(commands)")
      handled.withLock { $0 += commands }
    }
    let asleep = Atomic<Bool>(false)
    let sleepWatch = LoopObserver(activities: .beforeWaiting, name: "asleep") { _, _ in
      asleep.store(true, ordering: .releasing)
    }
    // After the wake-up: the worker's next steps, as its loop reports them.
    let woken = Atomic<Int>(0)
    let afterWake = LoopObserver(activities: [.afterWaiting, .beforeTimers], name: "after-wake") {
      _, activity in
      if activity == .afterWaiting,
        woken.compareExchange(expected: 1, desired: 2, ordering: .relaxed).exchanged
      {
        narration.event("woken by wakeUp()", at: SequenceStep(activity))
      } else if activity == .beforeTimers,
        woken.compareExchange(expected: 2, desired: 3, ordering: .relaxed).exchanged
      {
        narration.event(
          "back to step 2: step 9 had nothing to handle, the source waits for step 4",
          at: SequenceStep(activity))
      }
    }
    let sleeps = SleepNarrator(narration)
    let worker = RunLoopThread(name: "worker") { thread in
      thread.runLoop.addInstrument(sleeps)
      thread.runLoop.add(sleepWatch, mode: .default)
      thread.runLoop.add(afterWake, mode: .default)
      try thread.runLoop.add(source, mode: .default)
      try thread.runLoop.run()
    }
    narration.say("A worker thread adds the source to its loop and runs it.")
    try worker.start()
    // Wait until the worker's loop has gone to sleep, so the next signal finds it asleep.
    let asleepBy = ContinuousClock.now + .seconds(2)
    while !asleep.load(ordering: .acquiring) && ContinuousClock.now < asleepBy { usleep(2_000) }
    sleepWatch.invalidate()
    narration.say("The main thread puts 3 commands in the buffer and signals, without waking:")
    buffer.withLock { $0 += ["resize", "draw", "flush"] }
    source.signal()
    usleep(150_000)
    let beforeWake = performs.load(ordering: .relaxed)
    narration.expect(beforeWake == 0, "signal() alone did not wake the sleeping loop")
    narration.say("Now wake the loop (Listing 3-9: signal, then CFRunLoopWakeUp):")
    woken.store(1, ordering: .relaxed)
    worker.runLoop.wakeUp()
    let deadline = ContinuousClock.now + .seconds(2)
    while handled.withLock({ $0.count }) < 3 && ContinuousClock.now < deadline { usleep(5_000) }
    narration.expect(
      performs.load(ordering: .relaxed) == 1 && handled.withLock({ $0 }).count == 3,
      "one perform handled all 3 commands, in order")
    let lines = narration.eventLines
    let back = lines.firstIndex { $0.hasPrefix("back to step 2") }
    let perform = lines.firstIndex { $0.hasPrefix("perform: drained") }
    narration.expect(
      back != nil && perform != nil && back! < perform!,
      "woken, the loop went back to step 2 before it performed the source")
    afterWake.invalidate()
    narration.say("Invalidate the source, then stop the worker:")
    source.invalidate()
    worker.runLoop.perform { worker.runLoop.stop() }
    try worker.join()
    narration.expect(worker.state == .finished, "the worker thread finished")
  }
}
