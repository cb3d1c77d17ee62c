import RunLoopCore
import RunLoopJournal
import RunLoopObservers
import RunLoopPorts
import RunLoopTimers
import RunLoopTracing

/// Step 6: every loop traced to a JSON log and to journald.
func workerServiceStep6() throws {
  // Record every activity, call-out and sleep of every loop from now on.
  let log = try JSONLinesSink(path: "worker-service.jsonl")
  let journal = try JournalSink(identifier: "worker-service")
  let tracer = LoopTracer(sinks: [log, journal])
  tracer.attachToAllLoops()
  print("main: tracing as run \(tracer.runID)")

  // The main thread's port: a message queue and an eventfd its loop watches.
  let answers = GuardedState<[String]>([])
  let mainPort = try InProcessPort(name: "main.port") { message in
    let text = String(decoding: message.components.first ?? [], as: UTF8.self)
    answers.withLock { $0.append(text) }
    print("main: \(text)")
  }
  try mainPort.add(to: .current, mode: .default)

  let commands = GuardedState<[String]>([])
  let source = CustomInputSource(name: "commands") {
    let batch = commands.withLock { buffer -> [String] in
      defer { buffer.removeAll() }
      return buffer
    }
    for command in batch {
      if command == "quit" {
        EventRunLoop.current.stop()
        continue
      }
      print("worker: \(command)")
      let answer = Array("done: \(command)".utf8)
      try? mainPort.send(msgid: 1, components: [answer], before: .now + .seconds(1))
    }
  }
  let ticks = GuardedState(0)

  let worker = RunLoopThread(name: "worker") { thread in
    try thread.runLoop.add(source, mode: .default)
    let timer = try LoopTimer(
      fireAt: .now + .milliseconds(50), every: .milliseconds(50), name: "tick"
    ) { timer in
      let count = ticks.withLock { count -> Int in
        count += 1
        return count
      }
      print("worker: tick \(count)")
      if count == 3 { timer.invalidate() }
    }
    try thread.runLoop.add(timer, mode: .default)
    let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting], name: "sleep") {
      _, activity in
      print("worker: \(activity == .beforeWaiting ? "going to sleep" : "woke up")")
    }
    thread.runLoop.add(observer, mode: .default)
    print("worker: running my loop")
    try thread.runLoop.run()
    observer.invalidate()
    print("worker: my loop returned")
  }
  try worker.start()
  try worker.runLoop.performAndWait { print("worker: a closure from main ran in my loop") }

  // Queue a command, mark the source ready, wake the sleeping loop.
  func send(_ command: String) {
    commands.withLock { $0.append(command) }
    source.signal()
    worker.runLoop.wakeUp()
  }
  send("resize")
  send("draw")

  // The main thread waits in its own loop: the port's messages are its events.
  let deadline = ContinuousClock.now + .seconds(5)
  while (answers.withLock { $0.count } < 2 || ticks.withLock { $0 } < 3)
    && ContinuousClock.now < deadline
  {
    _ = try EventRunLoop.current.run(mode: .default, timeout: .milliseconds(50))
  }
  send("quit")
  try worker.join()
  source.invalidate()
  mainPort.invalidate()
  print("main: worker joined")
  // Detach from every loop; each sink writes what it has queued, then closes.
  tracer.close()
  print("main: trace in worker-service.jsonl and in the journal (-t worker-service)")
}
