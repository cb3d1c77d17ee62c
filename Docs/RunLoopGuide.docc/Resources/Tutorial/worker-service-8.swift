import RunLoopCore

/// Step 8: a command that runs the worker's loop again, nested, in a mode of its own.
func workerServiceStep8() throws {
  let modal: LoopMode = "modal"
  let commands = GuardedState<[String]>([])
  // Only in the default mode: while the worker is in the nested run, its signal waits. Its
  // handler ends the outer run: the plan to exit of this step.
  let progress = CustomInputSource(name: "progress") {
    print("worker: progress, back in default")
    EventRunLoop.current.stop()
  }
  // Only in the modal mode: the nested run is waiting for it.
  let answer = CustomInputSource(name: "answer") { print("worker: the answer arrived in modal") }
  let source = CustomInputSource(name: "commands") {
    let batch = commands.withLock { buffer -> [String] in
      defer { buffer.removeAll() }
      return buffer
    }
    for command in batch {
      // A nested run from inside a call-out: only the modal mode's sources take part.
      print("worker: \(command): a nested run in '\(modal.name)'")
      let loop = EventRunLoop.current
      let result = try? loop.run(mode: modal, timeout: .seconds(5), returnAfterSourceHandled: true)
      print("worker: the nested run returned \(result.map(\.description) ?? "an error")")
    }
  }

  let worker = RunLoopThread(name: "worker") { thread in
    try thread.runLoop.add(source, mode: .default)
    try thread.runLoop.add(progress, mode: .default)
    try thread.runLoop.add(answer, mode: modal)
    print("worker: running my loop")
    try thread.runLoop.run()
    print("worker: my loop returned")
  }
  try worker.start()
  try worker.runLoop.performAndWait { print("worker: a closure from main ran in my loop") }

  commands.withLock { $0.append("confirm") }
  source.signalAndWakeUp()
  progress.signalAndWakeUp()  // default mode only: held until the nested run returns
  answer.signalAndWakeUp()  // modal mode only: ends the nested run
  try worker.join()
  for item in [source, progress, answer] { item.invalidate() }
  print("main: worker joined")
}
