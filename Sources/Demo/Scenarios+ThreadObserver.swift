import RunLoopCore
import RunLoopObservers
import RunLoopTimers

extension Scenarios {
  static let threadObserver = Scenario(
    name: "thread-observer",
    title: "A thread's main routine: an observer on its own loop, a timer, runs checked one by one",
    guide:
      "Run Loops > Configuring the Run Loop (Listing 3-1), Starting the Run Loop (Listing 3-2)",
    article: "RunLoopObservers.md, Listing 3-1, here"
  ) { narration in
    let activities = GuardedState<[String]>([])
    let results = GuardedState<[RunResult]>([])
    let worker = RunLoopThread(name: "worker") { thread in
      let loop = thread.runLoop
      // Listing 3-1: an observer for every activity, added to this thread's own loop.
      let observer = LoopObserver(activities: .allActivities, name: "watcher") { _, activity in
        activities.withLock { $0.append(activity.name) }
        narration.event("observer: \(activity.name)", at: SequenceStep(activity))
      }
      loop.add(observer, mode: .default)
      let fires = GuardedState(0)
      let timer = try LoopTimer(
        fireAt: .now + .milliseconds(30), every: .milliseconds(60), name: "tick"
      ) { timer in
        let count = fires.withLock { count -> Int in
          count += 1
          return count
        }
        activities.withLock { $0.append("timer") }
        narration.event("timer 'tick' fired (\(count))")
        if count == 2 { timer.invalidate() }
      }
      try loop.add(timer, mode: .default)
      // Listing 3-2: run in slices, look at why each run returned, decide whether to go on.
      var result = RunResult.timedOut
      while result == .timedOut {
        result = try loop.run(mode: .default, timeout: .milliseconds(50))
        results.withLock { $0.append(result) }
        narration.event("run returned '\(result)'", at: .outside)
      }
      observer.invalidate()
    }
    narration.say("The worker adds an observer and a timer (fires at 30 and 90 ms, then stops) to")
    narration.say("its own loop, and runs it 50 ms at a time until a run does not time out.")
    try worker.start()
    try worker.join()
    let order = activities.withLock { $0 }
    let runs = results.withLock { $0 }
    narration.expect(
      order.filter { $0 == "entry" }.count == runs.count
        && order.filter { $0 == "exit" }.count == runs.count,
      "each of the \(runs.count) runs had its own entry (step 1) and exit (step 10)")
    narration.expect(order.filter { $0 == "timer" }.count == 2, "the timer fired twice")
    narration.expect(
      runs.last == .finished && runs.dropLast().allSatisfy { $0 == .timedOut },
      "the runs timed out until the timer was gone; then the mode was empty: 'finished'")
  }
}
