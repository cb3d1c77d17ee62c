import RunLoopCore

/// An actor whose methods run on the worker's loop, as jobs of its executor.
actor TickCounter {
  let loop: EventRunLoop
  private var count = 0

  init(loop: EventRunLoop) {
    self.loop = loop
  }

  nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

  func increment() -> Int {
    count += 1
    print("worker: count \(count), on thread '\(RunLoopThread.current?.name ?? "?")'")
    return count
  }
}

/// Step 9: a task awaits work on the worker's loop, and an actor lives there.
func workerServiceStep9() async throws {
  let worker = RunLoopThread(name: "worker") { thread in
    let keepAlive = CustomInputSource(name: "keep-alive") {}
    try thread.runLoop.add(keepAlive, mode: .default)
    print("worker: running my loop")
    try thread.runLoop.run()
    print("worker: my loop returned")
    keepAlive.invalidate()
  }
  try worker.start()

  // An awaited submit: the task suspends (no thread waits) until the closure has run.
  let answer = try await worker.runLoop.submit { 21 * 2 }
  print("main: the worker's loop computed \(answer)")

  // Each call is a job on the worker's loop; the task resumes with its result.
  let counter = TickCounter(loop: worker.runLoop)
  for _ in 1...2 {
    let count = await counter.increment()
    print("main: the counter is \(count)")
  }

  try await worker.runLoop.submit { EventRunLoop.current.stop() }
  try await worker.join()  // suspends this task until the thread has ended
  print("main: worker joined")
}
