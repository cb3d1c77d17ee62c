import Glibc
import RunLoopCore
import RunLoopObservers

extension Scenarios {
  static let exitFlag = Scenario(
    name: "exit-flag",
    title: "Ending a long job: run the loop without waiting between chunks, check an exit flag",
    guide: "Thread Management > Terminating a Thread (Listing 2-3)",
    article: "ThreadManagement.md, Ending a thread"
  ) { narration in
    let chunks = 40
    let done = GuardedState(0)
    let sleeps = GuardedState(0)
    let sleepWatch = LoopObserver(activities: .beforeWaiting, name: "sleeps") { _, _ in
      sleeps.withLock { $0 += 1 }
    }
    // The exit request: a custom source whose handler sets the flag in the thread dictionary.
    let exitSource = CustomInputSource(name: "exit-request") {
      RunLoopThread.current?.withThreadDictionary { $0["ThreadShouldExitNow"] = true }
      narration.event("exit source fired: ThreadShouldExitNow = true")
    }
    let worker = RunLoopThread(name: "worker") { thread in
      let loop = thread.runLoop
      thread.withThreadDictionary { $0["ThreadShouldExitNow"] = false }
      try loop.add(exitSource, mode: .default)
      loop.add(sleepWatch, mode: .default)
      var exitNow = false
      while done.withLock({ $0 }) < chunks && !exitNow {
        usleep(5_000)  // one chunk of a larger body of work
        done.withLock { $0 += 1 }
        // Serve the loop without waiting: a source that is ready fires, nothing sleeps.
        _ = try loop.run(mode: .default, timeout: .zero)
        exitNow = thread.withThreadDictionary { $0["ThreadShouldExitNow"] as? Bool ?? false }
      }
      narration.event(
        "flag seen after chunk \(done.withLock { $0 }) of \(chunks): the thread ends", at: .outside)
    }
    narration.say("A worker does \(chunks) chunks of 5 ms; after each it runs its loop with a zero")
    narration.say(
      "timeout, then reads ThreadShouldExitNow. The main thread asks it to exit at 50 ms.")
    try worker.start()
    usleep(50_000)
    exitSource.signal()
    worker.runLoop.wakeUp()
    try worker.join()
    exitSource.invalidate()
    sleepWatch.invalidate()
    let finished = done.withLock { $0 }
    narration.expect(
      finished < chunks, "the job stopped early, after \(finished) of \(chunks) chunks")
    narration.expect(
      sleeps.withLock { $0 } == 0, "the zero-timeout runs never slept: no beforeWaiting at all")
    narration.expect(worker.state == .finished, "the thread ended on its own, and join() returned")
  }
}
