import Glibc
import RunLoopCore
import RunLoopTimers

/// Step 3: a repeating timer on the worker's loop.
func workerServiceStep3() throws {
  let commands = GuardedState<[String]>([])
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
  // How often the timer fired, read by the main thread: behind a lock too.
  let ticks = GuardedState(0)

  let worker = RunLoopThread(name: "worker") { thread in
    try thread.runLoop.add(source, mode: .default)
    // Every 50 ms on a fixed grid; it invalidates itself after its third fire.
    let timer = try LoopTimer(
      fireAt: .now + .milliseconds(50), every: .milliseconds(50), name: "tick"
    ) { timer in
      let count = ticks.withLock { count -> Int in
        count += 1
        return count
      }
      print("worker: tick \(count)")
      if count == 3 { timer.invalidate() }
    }
    try thread.runLoop.add(timer, mode: .default)
    print("worker: running my loop")
    try thread.runLoop.run()
    print("worker: my loop returned")
  }
  try worker.start()
  try worker.runLoop.performAndWait { print("worker: a closure from main ran in my loop") }

  // Queue a command, mark the source ready, wake the sleeping loop.
  func send(_ command: String) {
    commands.withLock { $0.append(command) }
    source.signal()
    worker.runLoop.wakeUp()
  }
  send("resize")
  send("draw")

  // Wait for the third tick, then ask the worker to quit.
  let deadline = ContinuousClock.now + .seconds(5)
  while ticks.withLock({ $0 }) < 3 && ContinuousClock.now < deadline {
    usleep(10_000)
  }
  send("quit")
  try worker.join()
  source.invalidate()
  print("main: worker joined")
}
