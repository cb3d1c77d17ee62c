import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTimers
import Synchronization

extension Scenarios {
  static let observers = Scenario(
    name: "observers", title: "Observers see each step of the run loop's sequence of events",
    guide: "Run Loops > Run Loop Observers, The Run Loop Sequence of Events",
    article: "SequenceOfEvents.md, Watching the steps",
    exercise: Exercise(
      setUp: [
        "An observer for every activity and a one-shot timer due in 60 ms, in a mode of",
        "their own; the loop runs in that mode.",
      ],
      question: "In which order does the observer hear these, and when does the timer fire?",
      events: [
        .init(text: "the observer hears afterWaiting", marker: "observer: afterWaiting"),
        .init(text: "the timer fires", marker: "timer 'tick' fired"),
        .init(text: "the observer hears beforeTimers", marker: "observer: beforeTimers"),
        .init(text: "the observer hears beforeWaiting", marker: "observer: beforeWaiting"),
      ])
  ) { narration in
    let loop = EventRunLoop.current
    let mode = LoopMode("observed")
    let seen = GuardedState<[String]>([])
    let observer = LoopObserver(activities: .allActivities, name: "narrator") { _, activity in
      seen.withLock { $0.append(activity.name) }
      narration.event("observer: \(activity.name)", at: SequenceStep(activity))
    }
    let once = Atomic<Int>(0)
    let oneShot = LoopObserver(activities: .beforeWaiting, repeats: false, name: "once") { _, _ in
      once.add(1, ordering: .relaxed)
    }
    loop.add(observer, mode: mode)
    loop.add(oneShot, mode: mode)
    // The sleep as a line of its own, at the step the loop reports for it.
    let sleeps = SleepNarrator(narration, note: "until the timer's fire date")
    loop.addInstrument(sleeps)
    defer {
      observer.invalidate()
      oneShot.invalidate()
      loop.removeInstrument(sleeps)
    }
    let timer = try LoopTimer(fireAt: .now + .milliseconds(60), name: "tick") { _ in
      seen.withLock { $0.append("timer") }
      narration.event("timer 'tick' fired")
    }
    try loop.add(timer, mode: mode)
    narration.say("An observer for every activity, a one-shot observer for beforeWaiting,")
    narration.say("and a one-shot timer due in 60 ms; the run ends when the mode is empty.")
    let result = try loop.run(mode: mode, timeout: .seconds(2))
    let order = seen.withLock { $0 }
    narration.expect(
      order.first == "entry" && order.last == "exit", "the run began with entry and ended with exit"
    )
    narration.say("The classic puzzle: beforeTimers was announced before the sleep, yet the timer")
    narration.say("fired after afterWaiting. Step 2 says timers MAY fire in this pass; 'tick' was")
    narration.say("not due, so the loop slept (steps 6-7) with timerfd set to its fire date, woke")
    narration.say(
      "(step 8) and fired it in step 9. beforeTimers does not mean 'a timer fires now'.")
    let firstTimers = order.firstIndex(of: "beforeTimers")
    let sleep = order.firstIndex(of: "beforeWaiting")
    let wake = order.firstIndex(of: "afterWaiting")
    let fired = order.firstIndex(of: "timer")
    if let firstTimers, let sleep, let wake, let fired {
      narration.expect(
        firstTimers < sleep && sleep + 1 == wake && wake < fired
          && !order[wake..<fired].contains("beforeTimers"),
        "beforeTimers (2) < beforeWaiting (6) < afterWaiting (8) < the timer's call-out (9),"
          + " with no beforeTimers between the wake-up and the fire")
    } else {
      narration.expect(false, "the run announced timers, slept, woke and fired the timer")
    }
    narration.expect(
      once.load(ordering: .relaxed) == 1, "the one-shot observer was called once, then removed")
    narration.expect(result == .finished, "the run returned '\(result)' once the timer was gone")
  }

  static let performs = Scenario(
    name: "performs", title: "Perform requests: run a closure on another thread's run loop",
    guide: "Run Loops > Perform Selector Sources (Table 3-2)",
    article: "UsingRunLoopObjects.md, Perform requests"
  ) { narration in
    let loop = EventRunLoop.current
    let idle = keepAlive("idle")
    try loop.add(idle, mode: .default)
    let special = LoopMode("special")
    let idleSpecial = keepAlive("idle-special")
    try loop.add(idleSpecial, mode: special)
    defer {
      idle.invalidate()
      idleSpecial.invalidate()
    }
    let worker = RunLoopThread(name: "worker") { thread in
      try thread.runLoop.add(keepAlive("worker-idle"), mode: .default)
      try thread.runLoop.run()
    }
    try worker.start()
    narration.say("1. The worker asks the main loop to run a closure:")
    let ranOnMain = Atomic<Bool>(false)
    worker.runLoop.perform {
      EventRunLoop.main.perform(name: "hello-main") {
        ranOnMain.store(EventRunLoop.current.isMain, ordering: .relaxed)
        narration.event("ran on the main thread's loop, which it woke")
      }
    }
    let deadline = ContinuousClock.now + .seconds(2)
    while !ranOnMain.load(ordering: .relaxed) && ContinuousClock.now < deadline {
      _ = try loop.run(mode: .default, timeout: .milliseconds(50), returnAfterSourceHandled: true)
    }
    narration.expect(ranOnMain.load(ordering: .relaxed), "the closure ran on the main thread")

    narration.say("2. The main thread runs a closure on the worker and waits for it:")
    let workerThread = Atomic<Bool>(false)
    try worker.runLoop.performAndWait(name: "on-worker", deadline: .now + .seconds(2)) {
      workerThread.store(RunLoopThread.current?.name == "worker", ordering: .relaxed)
      narration.event("ran on the worker, which it woke; the main thread is waiting")
    }
    narration.expect(workerThread.load(ordering: .relaxed), "performAndWait returned after it ran")

    narration.say("3. A request for mode 'special' waits while the loop runs 'default':")
    let ranInSpecial = Atomic<Int>(0)
    loop.perform(inModes: [special], name: "special-only") {
      ranInSpecial.add(1, ordering: .relaxed)
      narration.event(
        "ran in mode '\(loop.currentMode?.name ?? "?")', queued before the pass began")
    }
    _ = try loop.run(mode: .default, timeout: .milliseconds(100))
    narration.expect(ranInSpecial.load(ordering: .relaxed) == 0, "it did not run in 'default'")
    _ = try loop.run(mode: special, timeout: .milliseconds(100))
    narration.expect(ranInSpecial.load(ordering: .relaxed) == 1, "it ran once 'special' ran")

    narration.say("4. Delayed performs with a key; each new one cancels the earlier ones")
    narration.say("   (cancelPreviousPerformRequestsWithTarget:, the search-field pattern):")
    let searches = GuardedState<[String]>([])
    for text in ["r", "ru", "run"] {
      let cancelled = loop.cancelDelayedPerforms(key: "search")
      narration.event("typed '\(text)': cancelled \(cancelled) pending search", at: .outside)
      loop.perform(after: .milliseconds(300), inModes: [.default], key: "search", name: "search") {
        searches.withLock { $0.append(text) }
        narration.event("search for '\(text)' (a delayed perform is a timer)")
      }
      _ = try loop.run(mode: .default, timeout: .milliseconds(20))
    }
    let searchDeadline = ContinuousClock.now + .seconds(2)
    while searches.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline {
      _ = try loop.run(mode: .default, timeout: .milliseconds(50))
    }
    _ = try loop.run(mode: .default, timeout: .milliseconds(50))
    narration.expect(searches.withLock { $0 } == ["run"], "only the last search ran")
    worker.runLoop.perform { worker.runLoop.stop() }
    try worker.join()
  }

  static let nestedRuns = Scenario(
    name: "nested-runs", title: "A call-out may run the loop again, in another mode",
    guide: "Run Loops > Starting the Run Loop (run loops can be run recursively), Run Loop Modes",
    article: "RunLoopModes.md, Nested runs and the current mode",
    exercise: Exercise(
      setUp: [
        "In 'default': a timer 'open-dialog' due at 100 ms, whose handler runs the loop again",
        "in 'modal' for 150 ms; in 'modal': a timer 'modal-tick' every 40 ms from 140 ms.",
      ],
      question: "In which order do these happen?",
      events: [
        .init(
          text: "the nested run in 'modal' begins (entry)", marker: "entry of a run in 'modal'"),
        .init(text: "'modal-tick' fires", marker: "'modal-tick' fired"),
        .init(text: "'open-dialog' fires", marker: "'open-dialog' fired"),
        .init(text: "the nested run in 'modal' ends (exit)", marker: "exit of a run in 'modal'"),
      ])
  ) { narration in
    let loop = EventRunLoop.current
    let modal = LoopMode("modal")
    let depths = GuardedState<[String]>([])
    let watcher = LoopObserver(activities: [.entry, .exit], name: "depth") { _, activity in
      let mode = loop.currentMode?.name ?? "?"
      depths.withLock { $0.append("\(activity.name) \(mode)") }
      narration.event("\(activity.name) of a run in '\(mode)'", at: SequenceStep(activity))
    }
    loop.add(watcher, mode: .common)
    loop.add(watcher, mode: modal)
    let backgroundFires = GuardedState<[String]>([])
    let background = try LoopTimer(
      fireAt: .now + .milliseconds(30), every: .milliseconds(30), name: "background"
    ) { _ in backgroundFires.withLock { $0.append(loop.currentMode?.name ?? "?") } }
    try loop.add(background, mode: .default)
    let modalTicks = Atomic<Int>(0)
    let modalTimer = try LoopTimer(
      fireAt: .now + .milliseconds(140), every: .milliseconds(40), name: "modal-tick"
    ) { _ in
      modalTicks.add(1, ordering: .relaxed)
      narration.event("'modal-tick' fired (nested run)")
    }
    try loop.add(modalTimer, mode: modal)
    let outer = try LoopTimer(fireAt: .now + .milliseconds(100), name: "open-dialog") { _ in
      narration.event("'open-dialog' fired: run the loop in 'modal' for 150 ms")
      let before = backgroundFires.withLock { $0.count }
      _ = try? loop.run(mode: modal, timeout: .milliseconds(150))
      let after = backgroundFires.withLock { $0.count }
      narration.expect(
        after == before, "'background' (default mode) did not fire during the nested run")
    }
    try loop.add(outer, mode: .default)
    defer {
      watcher.invalidate()
      background.invalidate()
      modalTimer.invalidate()
      outer.invalidate()
    }
    narration.say("In 'default': 'background' every 30 ms and 'open-dialog' at 100 ms.")
    narration.say("'open-dialog' runs the loop in 'modal', where 'modal-tick' fires every 40 ms.")
    _ = try loop.run(mode: .default, timeout: .milliseconds(400))
    let sequence = depths.withLock { $0 }
    narration.expect(
      sequence.contains("entry modal") && sequence.contains("exit modal"),
      "the nested run had its own entry and exit")
    narration.expect(modalTicks.load(ordering: .relaxed) >= 2, "'modal-tick' fired inside it")
    narration.expect(
      backgroundFires.withLock { $0.allSatisfy { $0 == "default" } && $0.count >= 3 },
      "'background' went on in 'default' before and after")
  }
}
