import Dispatch
import Glibc
@testable import RunLoopCore

/// The executor subcommands: what must stop the process (a failed isolation check, a job for
/// a loop whose thread exited) and what needs the main thread (the main actor beside a
/// worker loop's actor). Standard error goes to standard output, so that the test reads the
/// runtime's and our fatal messages from the one pipe it has.
func runExecutorHelper(_ arguments: [String]) -> Never {
  dup2(1, 2)
  switch arguments.first {
  case "executor-isolation-failure":
    isolationFailure()
  case "executor-exited-loop":
    jobForExitedLoop()
  case "executor-stranded-jobs":
    strandedJobs()
  case "executor-main-actor":
    mainActorBesideWorkerActor()
  default:
    say("unknown executor subcommand \(arguments)")
    exit(2)
  }
}

/// An actor pinned to a loop.
private actor LoopBound {
  nonisolated let unownedExecutor: UnownedSerialExecutor
  private var calls = 0

  init(_ loop: EventRunLoop) {
    unownedExecutor = loop.asUnownedSerialExecutor()
  }

  func call() -> Int {
    calls += 1
    return calls
  }

  /// Serves the main actor: a call that calls the main actor back.
  func serve(_ round: Int) async -> String {
    calls += 1
    let onMain = await MainActor.run { EventRunLoop.current.isMain }
    let here = EventRunLoop.current.isMain ? "worker-on-main" : "worker"
    return "\(round):\(here)+\(onMain ? "main" : "not-main")"
  }
}

private func startWorker(_ name: String) -> RunLoopThread {
  let ready = DispatchSemaphore(value: 0)
  let thread = RunLoopThread(name: name) { thread in
    try thread.runLoop.add(CustomInputSource {}, mode: .default)
    ready.signal()
    while !thread.isCancelled {
      _ = try thread.runLoop.run(mode: .default, timeout: .seconds(60))
    }
  }
  do { try thread.start() } catch {
    say("error: \(error)")
    exit(1)
  }
  ready.wait()
  return thread
}

/// `preconditionIsolated` passes on the loop's thread and stops the process elsewhere.
private func isolationFailure() -> Never {
  let worker = startWorker("isolated")
  let actor = LoopBound(worker.runLoop)
  let checked = DispatchSemaphore(value: 0)
  worker.runLoop.perform {
    actor.preconditionIsolated("on the loop's thread")
    say("on-loop-thread:ok")
    checked.signal()
  }
  checked.wait()
  say("checking-off-loop")
  actor.preconditionIsolated("off the loop's thread")
  say("not-reached")
  exit(0)
}

/// A job for a loop whose thread has exited stops the process with a message.
private func jobForExitedLoop() -> Never {
  let done = DispatchSemaphore(value: 0)
  let thread = RunLoopThread(name: "short-lived") { _ in done.signal() }
  do { try thread.start() } catch { exit(1) }
  done.wait()
  try? thread.join()
  let actor = LoopBound(thread.runLoop)
  say("calling-exited-loop")
  Task.detached { _ = await actor.call() }
  sleep(10)
  say("not-reached")
  exit(0)
}

/// A thread that exits while a job waits in its loop's queue stops the process.
private func strandedJobs() -> Never {
  let release = DispatchSemaphore(value: 0)
  let started = DispatchSemaphore(value: 0)
  let thread = RunLoopThread(name: "never-runs") { _ in
    started.signal()
    release.wait()
  }
  do { try thread.start() } catch { exit(1) }
  started.wait()
  let actor = LoopBound(thread.runLoop)
  Task.detached { _ = await actor.call() }
  // The job is queued (the loop never runs); then the thread exits.
  while thread.runLoop.published.jobCount.load(ordering: .acquiring) == 0 { usleep(1000) }
  say("exiting-with-queued-job")
  release.signal()
  sleep(10)
  say("not-reached")
  exit(0)
}

/// The main actor keeps running while the main loop runs in a common mode, and an actor on a
/// worker loop and the main actor call each other.
private func mainActorBesideWorkerActor() -> Never {
  let main = EventRunLoop.main
  main.addCommonMode("tracking")
  do {
    try main.add(CustomInputSource {}, mode: "tracking")
    try main.add(CustomInputSource {}, mode: "private")
  } catch {
    say("error: \(error)")
    exit(1)
  }
  let worker = startWorker("worker")
  let actor = LoopBound(worker.runLoop)
  let results = GuardedState<[String]>([])
  // 1. Held while the main loop runs a mode that is not common.
  Task { @MainActor in results.withLock { $0.append("held") } }
  _ = try? main.run(mode: "private", timeout: .milliseconds(100))
  say("private:\(results.withLock { $0 })")
  // 2. Run in a common mode other than the default: the worker actor calls the main actor
  // back in every round.
  Task { @MainActor in
    for round in 0..<5 {
      let answer = await actor.serve(round)
      results.withLock { $0.append(answer) }
    }
    results.withLock { $0.append("done") }
  }
  let deadline = ContinuousClock.now + .seconds(20)
  while !results.withLock({ $0.contains("done") }), ContinuousClock.now < deadline {
    _ = try? main.run(mode: "tracking", timeout: .milliseconds(50))
  }
  say("tracking:\(results.withLock { $0.joined(separator: ",") })")
  exit(0)
}

/// Writes `line` straight to standard output (unbuffered: the process may be stopped next).
private func say(_ line: String) {
  let text = line + "\n"
  _ = text.utf8CString.withUnsafeBufferPointer { write(1, $0.baseAddress, $0.count - 1) }
}
