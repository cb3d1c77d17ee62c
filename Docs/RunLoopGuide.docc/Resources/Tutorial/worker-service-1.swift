import RunLoopCore

/// Step 1: a worker thread with a run loop of its own.
func workerServiceStep1() throws {
  let worker = RunLoopThread(name: "worker") { thread in
    // A loop returns at once from a mode with nothing in it: this source, never signalled,
    // keeps the default mode from being empty until step 2 gives the loop real work.
    let keepAlive = CustomInputSource(name: "keep-alive") {}
    try thread.runLoop.add(keepAlive, mode: .default)
    print("worker: running my loop")
    try thread.runLoop.run()
    print("worker: my loop returned")
    keepAlive.invalidate()
  }
  try worker.start()

  // Wait until the worker's loop runs: this closure runs on the worker's thread, in a pass.
  try worker.runLoop.performAndWait { print("worker: a closure from main ran in my loop") }

  // The plan to exit: a request that stops the loop from its own thread, then join.
  worker.runLoop.perform { EventRunLoop.current.stop() }
  try worker.join()
  print("main: worker joined")
}
