import RunLoopCore

extension Scenarios {
  /// The workbook's checklist: the difference between synchronous and asynchronous work, and
  /// between `async` and `sync`, shown on one loop so that the order is the loop's, not the
  /// machine's.
  static let syncAsync = Scenario(
    name: "sync-async",
    title: "async queues work for a later pass; sync runs it before it returns",
    guide: "Workbook: sync and async (DispatchQueue.async, DispatchQueue.sync)",
    article: "RunLoopsAndSwiftConcurrency.md, sync and async, performAndWait, perform and await",
    exercise: Exercise(
      setUp: [
        "A job runs on the worker's loop. Inside it, the job queues a second job with",
        "perform (the workbook's async), then runs a third with performAndWait (its sync),",
        "and then returns.",
      ],
      question: "In which order do these happen?",
      events: [
        .init(text: "the job queued with perform (async) runs", marker: "async job runs"),
        .init(text: "the job run with performAndWait (sync) runs", marker: "sync job runs"),
        .init(text: "the first job returns", marker: "first job returns"),
      ])
  ) { narration in
    let order = GuardedState<[String]>([])
    let worker = RunLoopThread(name: "worker") { thread in
      try thread.runLoop.add(keepAlive("keep-alive"), mode: .default)
      try thread.runLoop.run()
    }
    try worker.start()
    defer { try? worker.join() }
    let loop = worker.runLoop
    narration.say("A job on the worker's loop queues one job with perform (async), runs one with")
    narration.say("performAndWait (sync), and returns.")
    try loop.performAndWait(name: "first") {
      narration.event("the first job starts")
      _ = loop.perform(name: "queued") {
        order.withLock { $0.append("async") }
        narration.event("async job runs, in a later batch of requests")
        loop.stop()
      }
      narration.event("perform returned at once: its job waits for the loop")
      try? loop.performAndWait(name: "inline") {
        order.withLock { $0.append("sync") }
        narration.event("sync job runs now: on its own loop's thread it runs inline")
      }
      order.withLock { $0.append("return") }
      narration.event("first job returns")
    }
    try worker.join()
    let seen = order.withLock { $0 }
    narration.expect(
      seen == ["sync", "return", "async"],
      "the sync job ran before performAndWait returned, the async one only after the first"
        + " job returned (\(seen.joined(separator: ", ")))")
    narration.say("On another thread, performAndWait would block its caller until the loop ran")
    narration.say("the job; on the loop's own thread it runs the job at once, which is why it")
    narration.say("cannot deadlock as DispatchQueue.main.sync called on the main queue does.")
  }
}
