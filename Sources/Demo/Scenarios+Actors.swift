import Glibc
import RunLoopCore
import RunLoopJournal
import RunLoopTracing

/// An actor pinned to a worker's run loop: every job of it runs on that loop's thread.
private actor Catalog {
  nonisolated let unownedExecutor: UnownedSerialExecutor
  let loop: EventRunLoop
  private var entries: [String: Int] = [:]
  private(set) var log: [String] = []

  init(loop: EventRunLoop) {
    self.loop = loop
    unownedExecutor = loop.asUnownedSerialExecutor()
  }

  /// Serves the main actor: counts `key` on the worker's thread, then tells the main actor.
  func lookup(_ key: String, narration: Narration) async -> (count: Int, onWorker: Bool) {
    entries[key, default: 0] += 1
    let onWorker = loop.isCurrent
    narration.event("catalog.lookup(\"\(key)\"): a job on the worker's loop")
    await MainActor.run { narration.event("the main actor hears about \"\(key)\"") }
    return (entries[key]!, onWorker)
  }

  /// Records `entry`, runs the worker's loop nested for `duration` (a modal wait), records
  /// the end: the catalog's other calls wait until this returns.
  func modalWait(_ duration: Duration, narration: Narration, started: @Sendable () -> Void) {
    log.append("modal-start")
    started()
    narration.event("catalog.modalWait: running the worker's loop nested")
    _ = try? loop.run(mode: .default, timeout: duration)
    log.append("modal-end")
  }

  func note(_ entry: String) {
    log.append(entry)
  }
}

extension Scenarios {
  static let actors = Scenario(
    name: "actors",
    title: "Swift concurrency: an actor pinned to a worker's loop serves the main actor",
    guide: "Run Loops > When Would You Use a Run Loop? (with Swift actors)",
    article: "RunLoopsAndSwiftConcurrency.md, Actors and executors"
  ) { narration in
    let main = EventRunLoop.main
    let worker = RunLoopThread(name: "worker") { thread in
      try thread.runLoop.add(keepAlive("keep-alive"), mode: .default)
      while !thread.isCancelled {
        _ = try thread.runLoop.run(mode: .default, timeout: .seconds(1))
      }
    }
    try worker.start()
    // Jobs as call-outs of kind "job", in journald as well when it is there.
    let identifier = "runloop-demo-actors"
    let journal = try? JournalSink(identifier: identifier)
    let tracer = journal.map { LoopTracer(sinks: [$0], runID: "actors") }
    tracer?.attach(to: worker.runLoop)
    let catalog = Catalog(loop: worker.runLoop)

    narration.say("1. The main actor asks the catalog (an actor on the worker's loop) 3 times;")
    narration.say("   each call is a job on the worker's loop, which calls the main actor back.")
    let answers = GuardedState<[(Int, Bool, Bool)]>([])
    Task { @MainActor in
      for key in ["runloop", "actor", "runloop"] {
        let (count, onWorker) = await catalog.lookup(key, narration: narration)
        answers.withLock { $0.append((count, onWorker, EventRunLoop.current.isMain)) }
      }
    }
    let deadline = ContinuousClock.now + .seconds(5)
    let mainKeepAlive = keepAlive("keep-alive")
    try main.add(mainKeepAlive, mode: .default)
    while answers.withLock({ $0.count }) < 3, ContinuousClock.now < deadline {
      _ = try main.run(mode: .default, timeout: .milliseconds(20))
    }
    let results = answers.withLock { $0 }
    narration.expect(
      results.map(\.0) == [1, 1, 2] && results.allSatisfy { $0.1 && $0.2 },
      "3 answers in order: every lookup ran on the worker's thread, every reply on the main one")

    narration.say("2. While the main loop runs a mode that is not common, the main actor waits.")
    let heard = GuardedState(false)
    Task { @MainActor in heard.withLock { $0 = true } }
    let privateKeepAlive = keepAlive("private")
    try main.add(privateKeepAlive, mode: "private")
    _ = try main.run(mode: "private", timeout: .milliseconds(50))
    let heldInPrivate = !heard.withLock { $0 }
    _ = try main.run(mode: .default, timeout: .milliseconds(20))
    narration.expect(
      heldInPrivate && heard.withLock { $0 },
      "a main-actor job waited through 50 ms in 'private' and ran in the default mode")

    narration.say("3. An actor method that runs its loop nested keeps the actor's isolation:")
    narration.say("   a second call to the same actor waits until the first returns.")
    let finished = GuardedState(0)
    let modalStarted = GuardedState(false)
    Task.detached {
      await catalog.modalWait(.milliseconds(50), narration: narration) {
        modalStarted.withLock { $0 = true }
      }
      finished.withLock { $0 += 1 }
    }
    Task.detached {
      // Called while the modal wait runs: its job is queued on the worker's loop and held.
      while !modalStarted.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(1)) }
      await catalog.note("second-call")
      finished.withLock { $0 += 1 }
    }
    while finished.withLock({ $0 }) < 2, ContinuousClock.now < deadline + .seconds(5) {
      usleep(1_000)
    }
    let log = GuardedState<[String]>([])
    Task.detached {
      let entries = await catalog.log
      log.withLock { $0 = entries }
    }
    while log.withLock({ $0.isEmpty }), ContinuousClock.now < deadline + .seconds(5) {
      usleep(1_000)
    }
    narration.expect(
      log.withLock { $0 } == ["modal-start", "modal-end", "second-call"],
      "the second call ran after the modal wait ended, not inside its nested run")

    narration.say("4. Code the loop calls outside a job may claim the actor's isolation:")
    let claimed = (try? worker.runLoop.performAndWait { catalog.assumeIsolated { _ in } }) != nil
    narration.expect(claimed, "assumeIsolated passed in a perform request on the worker's thread")

    tracer?.close()
    if let journal, journal.statistics.sent > 0 {
      narration.say("The worker's jobs are in journald, as call-outs of kind 'job':")
      narration.say("  journalctl -t \(identifier) RUNLOOP_CALLOUT_KIND=job -o cat")
      narration.say("  journalctl -t \(identifier) RUNLOOP_CALLOUT_KIND=job -o json-pretty")
    }
    narration.say("With --json-log, `runloop-demo trace timeline` draws them on the worker's row.")
    main.remove(privateKeepAlive, mode: "private")
    main.remove(mainKeepAlive, mode: .default)
    worker.cancel()
    worker.runLoop.stop()
    try worker.join()
  }
}
