import Dispatch
import RunLoopCore

package func getLoopsExample() {
  // snippet: using-get
  let mine = EventRunLoop.current  // created on first use, the same object from then on
  let main = EventRunLoop.main  // reachable from any thread
  print(mine.isCurrent, mine === main, mine.isMain)
  // end snippet
}

package func skeletonThreadMain() throws {
  // snippet: using-skeleton
  let loop = EventRunLoop.current
  // Add sources and timers here: a mode with nothing in it returns .finished at once.
  var done = false
  while !done {
    // Run, but come back after each handled source or after ten seconds.
    let result = try loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
    // Stopped by someone, or nothing left to watch: leave.
    if result == .stopped || result == .finished { done = true }
    // Check any other exit condition here.
  }
  // end snippet
}

package func runVariantsExample() throws {
  // snippet: using-run-variants
  let loop = EventRunLoop.current
  try loop.run()  // default mode, until stop() or nothing is left to watch
  try loop.run(until: .now + .seconds(2))  // ... or until the deadline
  let ran = try loop.run(mode: .default, before: .now + .seconds(1))  // one source at most
  try loop.run(mode: .default, timeout: .milliseconds(250), returnAfterSourceHandled: false)
  try loop.run(mode: .default, seconds: 0.25)  // the CFRunLoopRunInMode spelling
  print(ran)
  // end snippet
}

package func performExample() throws {
  // snippet: using-perform
  let worker = RunLoopThread(name: "worker") { thread in
    try thread.runLoop.add(CustomInputSource(name: "keep-alive") {}, mode: .default)
    try thread.runLoop.run()
  }
  try worker.start()
  let loop = worker.runLoop

  // Queue a closure; it runs on the worker's thread in its next pass (this wakes it).
  loop.perform { print("on the worker") }

  // A request only for a mode the worker never runs: it waits, and can be cancelled.
  let waiting = loop.perform(inModes: ["report"]) { print("never printed") }
  if waiting.cancel() { print(waiting.state) }  // cancelled

  // Block until the closure has run on the worker, for at most a second.
  try loop.performAndWait(deadline: .now + .seconds(1)) { print("configured") }

  loop.stop()  // the worker is running: performAndWait just proved it
  try worker.join()
  // end snippet
}

package func mainLoopExample() throws {
  // snippet: using-main
  // On the main thread (anywhere else, running the main loop throws notOwningThread).
  DispatchQueue.main.async { print("a main-queue block") }
  Task { @MainActor in
    print("a main-actor job")
    EventRunLoop.main.stop()
  }
  EventRunLoop.performOnMain { print("a perform request on the main loop") }
  try EventRunLoop.main.run()  // returns .stopped once the main-actor job has run
  // end snippet
}

package func waitForMainExample() throws {
  // snippet: using-wait-for-main
  // On the main thread: a worker waits for the main loop, while this thread waits for it.
  let worker = RunLoopThread(name: "worker") { _ in
    do throws(RunLoopError) {
      try EventRunLoop.main.performAndWait(deadline: .now + .milliseconds(200)) {
        print("never: the main thread is in join(), not in its loop")
      }
    } catch {
      print(error.code == .timedOut ? "timed out: the main loop never ran it" : "\(error)")
    }
  }
  try worker.start()
  try worker.join()  // returns once the worker's wait has timed out
  print("joined")
  // end snippet
}
