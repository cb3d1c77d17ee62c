import RunLoopCore
import RunLoopTimers

package func noRunLoopExample() throws {
  // snippet: when-no-loop
  // A fixed job with nothing to wait for: the thread never runs its loop.
  let checksum = RunLoopThread(name: "checksum") { _ in
    var total: UInt64 = 0
    for value in 0..<1_000_000 as Range<UInt64> { total &+= value }
    print("checksum", total)
  }
  try checksum.start()
  try checksum.join()
  // end snippet
}

package func periodicWorkerExample() throws {
  // snippet: when-periodic-worker
  // Messages from other threads: a custom input source.
  let flush = CustomInputSource(name: "flush") { print("flush now") }

  let worker = RunLoopThread(name: "poller") { thread in
    let loop = thread.runLoop
    try loop.add(flush, mode: .default)
    // Periodic work: a repeating timer.
    let refresh = try LoopTimer(fireAt: .now, every: .seconds(5), tolerance: .milliseconds(500)) {
      _ in
      print("refresh the cache")
    }
    try loop.add(refresh, mode: .default)

    try loop.run()  // until stopped
    try loop.run(mode: .default, timeout: .zero)  // a last pass for anything still signalled
    refresh.invalidate()
    flush.invalidate()
  }
  try worker.start()

  // Other threads talk to the worker through its loop.
  flush.signalAndWakeUp()  // a signal is kept until the source runs
  worker.runLoop.perform { print("a closure on the worker's thread") }

  // The plan to exit: a perform that stops the loop from inside, then join.
  worker.runLoop.perform { EventRunLoop.current.stop() }
  try worker.join()
  // end snippet
}
