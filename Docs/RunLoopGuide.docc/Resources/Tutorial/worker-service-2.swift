import RunLoopCore

/// Step 2: a custom input source that the main thread feeds with commands.
func workerServiceStep2() throws {
  // The command buffer: shared by two threads, so it lives behind a lock.
  let commands = GuardedState<[String]>([])
  // Runs on the worker's thread when the source is signalled and the loop is awake.
  let source = CustomInputSource(name: "commands") {
    let batch = commands.withLock { buffer -> [String] in
      defer { buffer.removeAll() }
      return buffer
    }
    for command in batch {
      // The plan to exit comes through the buffer too, after every command queued before it.
      if command == "quit" {
        EventRunLoop.current.stop()
      } else {
        print("worker: \(command)")
      }
    }
  }

  let worker = RunLoopThread(name: "worker") { thread in
    try thread.runLoop.add(source, mode: .default)
    print("worker: running my loop")
    try thread.runLoop.run()
    print("worker: my loop returned")
  }
  try worker.start()
  try worker.runLoop.performAndWait { print("worker: a closure from main ran in my loop") }

  // Queue a command, mark the source ready, wake the sleeping loop.
  // Queue a command, mark the source ready, wake the sleeping loop.
  func send(_ command: String) {
    commands.withLock { $0.append(command) }
    source.signal()
    worker.runLoop.wakeUp()
  }
  send("resize")
  send("draw")

  send("quit")
  try worker.join()
  source.invalidate()
  print("main: worker joined")
}
