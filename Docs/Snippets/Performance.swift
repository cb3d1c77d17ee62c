import RunLoopCore
import RunLoopObservers
import RunLoopTimers

package func performanceSpinExample() throws {
  // snippet: performance-spin
  let worker = RunLoopThread(name: "worker") { thread in
    let loop = thread.runLoop
    loop.spinLimit = .microseconds(20)  // poll for at most 20 µs before blocking
    try loop.add(CustomInputSource(name: "jobs") {}, mode: .default)
    try loop.run(until: .now + .seconds(1))
    let spins = loop.spinStatistics
    print("\(spins.caught) of \(spins.spins) polls caught work, in \(spins.spinTime)")
  }
  try worker.start()
  try worker.join()
  // end snippet
}
