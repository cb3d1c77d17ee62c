import Dispatch
import RunLoopCore

extension Scenarios {
  static let mainQueue = Scenario(
    name: "main-queue",
    title: "The main loop drains the main dispatch queue, in the common modes only",
    guide: "Run Loops > Anatomy of a Run Loop (the main thread); Concurrency: the main queue",
    article: "UsingRunLoopObjects.md, The main loop and Dispatch"
  ) { narration in
    let loop = EventRunLoop.main
    let ran = GuardedState<[String]>([])
    let privateMode = LoopMode("private")
    let idle = keepAlive("idle-private")
    try loop.add(idle, mode: privateMode)
    defer { idle.invalidate() }
    narration.say("Another thread queues a block on DispatchQueue.main and a @MainActor job.")
    let worker = RunLoopThread(name: "worker") { _ in
      DispatchQueue.main.async {
        ran.withLock { $0.append("block:\(EventRunLoop.current.currentMode?.name ?? "?")") }
        narration.event("DispatchQueue.main block ran on the main thread")
      }
      Task { @MainActor in
        ran.withLock { $0.append("actor") }
        narration.event("@MainActor job ran on the main thread")
      }
    }
    try worker.start()
    try worker.join()
    narration.say("Run the main loop 100 ms in 'private', a mode that is not common:")
    _ = try loop.run(mode: privateMode, timeout: .milliseconds(100))
    narration.expect(
      ran.withLock { $0.isEmpty }, "nothing ran: the main queue's watch is in .common")
    narration.say("Run it in 'default', a common mode:")
    let deadline = ContinuousClock.now + .seconds(2)
    while ran.withLock({ $0.count }) < 2 && ContinuousClock.now < deadline {
      _ = try loop.run(mode: .default, timeout: .milliseconds(50))
    }
    let done = ran.withLock { $0 }
    narration.expect(
      done.contains("block:default") && done.contains("actor"),
      "the block and the main-actor job both ran, in the main loop's 'default' mode")
  }
}
