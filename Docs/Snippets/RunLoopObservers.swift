import Foundation
import RunLoopCore
import RunLoopObservers

// The code of RunLoopObservers.md.

package func observersListingExample() throws {
  // snippet: observers-listing
  let worker = RunLoopThread(name: "worker") { thread in
    let loop = thread.runLoop
    let observer = LoopObserver(activities: .allActivities, name: "logger") { _, activity in
      print("observer:", activity)
    }
    loop.add(observer, mode: .default)

    let tick = CustomInputSource(name: "tick") { print("tick") }
    try loop.add(tick, mode: .default)
    let ticker = Thread {
      for _ in 0..<10 {
        usleep(10_000)
        tick.signalAndWakeUp()
      }
    }
    ticker.start()
    for _ in 0..<10 {
      try loop.run(mode: .default, timeout: .milliseconds(100), returnAfterSourceHandled: true)
    }
  }
  try worker.start()
  try worker.join()
  // end snippet
}

package func observerOptionsExample(loop: EventRunLoop) {
  // snippet: observers-options
  let observer = LoopObserver(
    activities: [.beforeWaiting, .afterWaiting],  // any set of the six, or .allActivities
    repeats: true,  // false: called once, then invalid
    order: 10,  // ascending; ties in insertion order
    name: "sleep-watcher"  // how traces name its call-outs
  ) { observer, activity in
    print(activity)
  }
  loop.add(observer, mode: .common)
  // end snippet
}
