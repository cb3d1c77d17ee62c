import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTimers

// The code of RunLoopsAndSwiftConcurrency.md.

private func configure() {}
private func render() -> Int { 42 }
private func refresh() {}
private func redraw() {}

package func concurrencySyncAsyncExample(worker: EventRunLoop) async throws {
  // snippet: concurrency-sync-async
  // DispatchQueue.sync: block this thread until the work ran there.
  try worker.performAndWait { configure() }
  // DispatchQueue.async: queue it and go on (the request can still be cancelled).
  let request: PerformRequest = worker.perform { configure() }
  _ = request.cancel()
  // async/await: suspend this task (no thread waits) and get the value back.
  let frame = try await worker.submit { render() }
  print(frame)
  // end snippet
}

package func concurrencySerialQueueExample() throws {
  // snippet: concurrency-serial-queue
  let worker = RunLoopThread(name: "worker") { thread in
    // Something to watch, so that a run in the default mode does not return at once.
    try thread.runLoop.add(CustomInputSource(name: "keep-alive") {}, mode: .default)
    while !thread.isCancelled {
      try thread.runLoop.run(mode: .default, timeout: .seconds(1))
    }
  }
  try worker.start()
  // Like a serial queue: FIFO, one at a time, always on the same thread.
  for index in 0..<3 { worker.runLoop.perform { print("step", index) } }
  // end snippet
  worker.cancel()
  try worker.join()
}

package func concurrencyOwnThreadExample(worker: EventRunLoop) throws {
  // snippet: concurrency-own-thread
  worker.perform {
    // DispatchQueue.main.sync from the main queue deadlocks; this runs inline instead.
    try? worker.performAndWait { print("inline, on the worker's own thread") }
  }
  // end snippet
}

package func concurrencyDelayExample(worker: EventRunLoop) async throws {
  // snippet: concurrency-delay
  // DispatchQueue.main.asyncAfter(deadline: .now() + 1) { ... }
  let autosave = worker.perform(after: .seconds(1), inModes: [.default]) { print("autosave") }
  autosave.cancel()  // before it runs, as a DispatchWorkItem's cancel()
  // Task.sleep, on the loop's timers: it honours modes and tolerance.
  try await worker.sleep(for: .milliseconds(200), tolerance: .milliseconds(20))
  // end snippet
}

package func concurrencyTicksExample(loop: EventRunLoop) async {
  // snippet: concurrency-ticks
  // Timer.publish(every: 1, on: .main, in: .common).autoconnect().sink { ... }
  let ticks = loop.ticks(every: .seconds(1), inModes: [.common])
  for await tick in ticks {
    print("tick at", tick, "missed so far:", ticks.droppedCount)
  }
  // end snippet
}

package func concurrencySuspendExample(loop: EventRunLoop) throws {
  // snippet: concurrency-suspend
  // DispatchSourceTimer: makeTimerSource, schedule, resume to start, suspend, resume again.
  let countdown = try LoopTimer(fireAt: .now + .seconds(1), every: .seconds(1)) { _ in
    print("tick")
  }
  try loop.add(countdown, mode: .default)  // starts: no resume() needed first
  countdown.suspend()  // keeps the time that was left
  countdown.resume()  // and continues from there
  countdown.invalidate()  // unlike a suspended dispatch source, free to release at any time
  // end snippet
}

// snippet: concurrency-actor
/// An actor whose every job runs on one loop's thread.
actor Indexer {
  let loop: EventRunLoop
  private var indexed = 0

  init(loop: EventRunLoop) {
    self.loop = loop
  }

  nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

  func index(_ document: String) -> Int {
    indexed += 1  // on the loop's thread, never concurrently
    return indexed
  }
}
// end snippet

package func concurrencyActorExample(worker: EventRunLoop) async throws {
  // snippet: concurrency-actor-use
  let indexer = Indexer(loop: worker)
  let count = await indexer.index("README.md")  // a job, run in the loop's common modes
  // Code the loop calls outside a job (a timer, a request) may claim the isolation:
  let seen = try await worker.submit { indexer.assumeIsolated { _ in count } }
  print(seen)
  // end snippet
}

package func concurrencyModesExample(loop: EventRunLoop) async {
  // snippet: concurrency-modes
  // Jobs of this executor run only while the loop runs in "tracking"; elsewhere they wait.
  let tracking = loop.executor(modes: ["tracking"])
  await withTaskExecutorPreference(tracking) {
    print("on the loop's thread, in the tracking mode")
  }
  // end snippet
}

package func concurrencySequencesExample(worker: EventRunLoop, pipeReadEnd: Int32) async throws {
  // snippet: concurrency-sequences
  let (port, messages) = try InProcessPort.messages(on: worker, buffering: .oldest(256))
  try port.send(msgid: 1, before: .now + .seconds(1))
  for await message in messages {
    print("message", message.msgid, "refused so far:", messages.droppedCount)
    break  // leaving the loop invalidates the port
  }
  for await events in try DescriptorSource.readiness(of: pipeReadEnd, on: worker) {
    print(events)  // the watch pauses until the next iteration
    break
  }
  // end snippet
}

package func concurrencyNamedPortRequestsExample(worker: EventRunLoop) async throws {
  // snippet: concurrency-named-port-requests
  // The server: requests arrive in a task; each is answered once, from any thread or task.
  let (server, requests) = try NamedPortServer.requests(
    name: "com.example.upper", on: worker, capacity: 64)
  let serving = Task {
    for await request in requests where request.expectsReply {
      request.reply(Array(String(decoding: request.message.data, as: UTF8.self).uppercased().utf8))
    }
  }
  // A client, in this process or another: awaiting suspends the task, no pool thread waits.
  let port = try NamedPort(name: "com.example.upper")
  let reply = try await port.request(msgid: 1, data: Array("hello".utf8))
  print(String(decoding: reply, as: UTF8.self))  // "HELLO"
  serving.cancel()  // stops the server; clients still waiting get `serverStopped`
  print(server.statistics.requestsRefusedBusy, server.statistics.requestsUnanswered)
  // end snippet
}

// snippet: concurrency-main
// main.swift of a program that wants our main loop and async code. Top-level code, no
// `await` here: the main thread stays ours, and the body runs on the main actor.
func runMainProgram() throws {
  let answer = try EventRunLoop.runMain {
    try await Task.sleep(for: .milliseconds(10))  // the main loop serves the wake-up
    return 42
  }
  print(answer)
}
// end snippet

/// The program of the region above, for `runloop-snippets` (the region shows it as a
/// function of `main.swift`, where it needs no access level).
package func mainLoopProgram() throws {
  try runMainProgram()
}
