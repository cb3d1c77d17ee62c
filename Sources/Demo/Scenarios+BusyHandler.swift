import RunLoopCore
import RunLoopTimers

extension Scenarios {
  static let busyHandler = Scenario(
    name: "busy-handler",
    title: "A handler that waits in a loop of its own starves the loop's timers",
    guide: "Run Loops > Configuring Run Loop Sources (a handler must return to the loop)",
    article: "ThreadManagement.md, Ending a thread"
  ) { narration in
    let loop = EventRunLoop.current
    let ticks = GuardedState<[String]>([])
    let phase = GuardedState("before")
    let tick = try LoopTimer(
      fireAt: .now + .milliseconds(20), every: .milliseconds(20), name: "tick"
    ) { _ in
      ticks.withLock { $0.append(phase.withLock { $0 }) }
    }
    try loop.add(tick, mode: .default)
    defer { tick.invalidate() }
    let work = 300
    narration.say("A timer ticks every 20 ms. A source's handler then works for \(work) ms,")
    narration.say("first waiting in a loop of its own, never returning to the run loop:")
    let busy = CustomInputSource(name: "busy") {
      phase.withLock { $0 = "busy" }
      narration.event("'busy' starts \(work) ms of work without returning to the loop")
      let end = ContinuousClock.now + .milliseconds(work)
      while ContinuousClock.now < end {}  // its own loop: the run loop cannot run anything
      phase.withLock { $0 = "after" }
      narration.event("'busy' returns")
    }
    try loop.add(busy, mode: .default)
    defer { busy.invalidate() }
    try loop.add(
      LoopTimer(fireAt: .now + .milliseconds(100), name: "start-busy") { _ in busy.signal() },
      mode: .default)
    _ = try loop.run(mode: .default, timeout: .milliseconds(100 + work + 100))
    let starved = ticks.withLock { $0 }
    narration.event(
      "ticks: \(starved.filter { $0 == "before" }.count) before, "
        + "\(starved.filter { $0 == "busy" }.count) during, "
        + "\(starved.filter { $0 == "after" }.count) after")
    narration.expect(
      !starved.contains("busy"), "no tick fired while the handler kept the loop from running")
    narration.expect(
      starved.filter { $0 == "after" }.count < (100 + work) / 20,
      "the missed ticks were not made up afterwards: a late timer fires once, then on its grid")

    narration.say("The same work in 10 ms chunks, each chunk a perform request that queues the")
    narration.say("next, so the loop gets back to its timers between chunks:")
    ticks.withLock { $0.removeAll() }
    phase.withLock { $0 = "chunked" }
    let chunks = work / 10
    let done = GuardedState(0)
    @Sendable func chunk() {
      let end = ContinuousClock.now + .milliseconds(10)
      while ContinuousClock.now < end {}
      let finished = done.withLock { count -> Int in
        count += 1
        return count
      }
      if finished < chunks {
        loop.perform(inModes: [.default], name: "chunk") { chunk() }
      } else {
        loop.stop()
      }
    }
    loop.perform(inModes: [.default], name: "chunk") { chunk() }
    _ = try loop.run(mode: .default, timeout: .seconds(5))
    let served = ticks.withLock { $0 }.count
    narration.event("\(chunks) chunks done, \(served) ticks fired between them")
    narration.expect(
      done.withLock { $0 } == chunks && served >= 3,
      "the timer kept firing while the work was done in chunks")
  }
}
