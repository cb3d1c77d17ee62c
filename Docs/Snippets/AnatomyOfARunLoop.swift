import RunLoopCore
import RunLoopObservers
import RunLoopTimers

package func anatomyExample() throws {
  // snippet: anatomy-worker
  let worker = RunLoopThread(name: "anatomy") { thread in
    let loop = thread.runLoop

    // An input source: another thread signals it, this loop performs it.
    let jobs = CustomInputSource(name: "jobs") { print("a job arrived") }
    try loop.add(jobs, mode: .default)

    // A timer source: the loop fires it at a time it knows in advance.
    let tick = try LoopTimer(fireAt: .now + .milliseconds(100), every: .milliseconds(100)) { _ in
      print("tick")
    }
    try loop.add(tick, mode: .default)

    // An observer: told where the loop is in its sequence of events.
    let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in
      print("loop:", activity)
    }
    loop.add(observer, mode: .default)

    // Enter the loop for one second: it sleeps, wakes for each tick, and sleeps again.
    try loop.run(until: .now + .seconds(1))
    tick.invalidate()
    jobs.invalidate()
  }
  try worker.start()
  try worker.join()
  // end snippet
}

package func anatomyResultExample() throws {
  // snippet: anatomy-result
  let loop = EventRunLoop.current
  switch try loop.run(mode: .default, timeout: .seconds(1)) {
  case .finished: print("nothing to watch in this mode: the run returned at once")
  case .stopped: print("someone called stop()")
  case .timedOut: print("the second is over")
  case .handledSource: print("only with returnAfterSourceHandled: true")
  }
  // end snippet
}
