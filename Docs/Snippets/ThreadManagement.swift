import Glibc
import RunLoopCore

package func threadAttributesExample() throws {
  // snippet: thread-attributes
  let indexer = RunLoopThread(
    name: "indexer",  // Linux keeps the first 15 bytes: see `top -H`
    stackSize: 1 << 20,  // 1 MiB; below PTHREAD_STACK_MIN, start() throws invalidArgument
    priority: .nice(10),  // a refused priority makes start() throw; the entry never runs
    detached: false  // joinable: join() waits and reports the entry's error
  ) { thread in
    print("running on", thread.name, "with", RunLoopThread.currentStackSize, "bytes of stack")
  }
  try indexer.start()
  try indexer.join()
  // end snippet
}

struct IndexingFailed: Error {}

package func threadErrorExample() throws {
  // snippet: thread-errors
  RunLoopThread.failureHandler = { thread, error in
    print("thread \(thread.name) failed: \(error)")  // on the failing thread
  }
  let failing = RunLoopThread(name: "failing") { _ in throw IndexingFailed() }
  try failing.start()
  do {
    try failing.join()
  } catch {
    print(error.code == .threadFailed)  // true: join reports it as well
    if let original = failing.failure { print("the entry threw", original) }
  }
  // end snippet
}

package func threadDictionaryExample() throws {
  // snippet: thread-dictionary
  let worker = RunLoopThread(name: "worker") { thread in
    let attempts = thread.withThreadDictionary { $0["attempts"] as? Int ?? 0 }
    thread.withThreadDictionary { $0["attempts"] = attempts + 1 }
  }
  worker.withThreadDictionary { $0["attempts"] = 2 }  // before or after start, any thread
  try worker.start()
  try worker.join()
  print(worker.withThreadDictionary { $0["attempts"] } ?? "none")  // 3
  print(RunLoopThread.isMultiThreaded)  // true from the first start() on
  // end snippet
}

package func exitPatternExample() throws {
  // snippet: thread-exit-pattern
  let worker = RunLoopThread(name: "chunker") { thread in
    let loop = thread.runLoop
    // The input source other threads signal to ask for an exit.
    let exitSource = CustomInputSource(name: "exit") {
      thread.withThreadDictionary { $0["exitNow"] = true }
    }
    try loop.add(exitSource, mode: .default)
    thread.withThreadDictionary { $0["exitSource"] = exitSource }

    var moreWorkToDo = true
    var exitNow = false
    var chunk = 0
    while moreWorkToDo && !exitNow {
      chunk += 1  // one chunk of the real work goes here
      moreWorkToDo = chunk < 10_000
      // Give input sources a chance without ever sleeping: a zero timeout.
      try loop.run(mode: .default, timeout: .zero)
      exitNow = thread.withThreadDictionary { $0["exitNow"] as? Bool ?? false }
    }
    exitSource.invalidate()
  }
  try worker.start()

  // Another thread, later: find the source and signal it. No wake-up is needed, since the
  // worker never sleeps; the next zero-timeout run performs the source.
  while worker.withThreadDictionary({ $0["exitSource"] }) == nil { usleep(1_000) }
  let exitSource = worker.withThreadDictionary { $0["exitSource"] } as? CustomInputSource
  exitSource?.signal()
  try worker.join()
  // end snippet
}

package func sharedStateExample() {
  // snippet: thread-shared-state
  let commands = GuardedState<[String]>([])

  // Any thread: append under the lock (the workbook's @synchronized block).
  commands.withLock { $0.append("draw") }

  // The loop's thread: take the whole buffer under the lock, run it after releasing it.
  let batch = commands.withLock { buffer -> [String] in
    defer { buffer.removeAll() }
    return buffer
  }
  for command in batch { print(command) }
  // end snippet
}
