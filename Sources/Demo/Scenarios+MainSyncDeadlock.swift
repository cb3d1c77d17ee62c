import Dispatch
import Foundation
import Glibc
import RunLoopCore

extension Scenarios {
  /// Set in the child processes of `main-sync-deadlock`: which deadlock the child shows.
  static let deadlockChildVariable = "RUNLOOP_DEMO_DEADLOCK"

  /// How long a child that said it is about to wait may stay stuck before it is called
  /// deadlocked and killed.
  static let deadlockBound: Duration = .milliseconds(500)

  /// The child's side: `wait-for-worker` blocks the main thread on a worker that calls
  /// `DispatchQueue.main.sync`; `sync-on-main` calls it from the main thread itself. Each
  /// prints a line before it waits and one after, which a deadlocked child never prints.
  static func deadlockChild(_ role: String) throws {
    switch role {
    case "wait-for-worker":
      let worker = RunLoopThread(name: "worker") { _ in
        StandardStreams.out("child: worker calls DispatchQueue.main.sync")
        DispatchQueue.main.sync {}
        StandardStreams.out("child: worker's main.sync returned")
      }
      try worker.start()
      StandardStreams.out("child: main thread waits for the worker (join)")
      try worker.join()
      StandardStreams.out("child: joined the worker")
    default:
      StandardStreams.out("child: main thread calls DispatchQueue.main.sync")
      DispatchQueue.main.sync {}
      StandardStreams.out("child: main.sync returned")
    }
  }

  /// What a child of `main-sync-deadlock` printed, and how it ended: `deadlocked` when it
  /// was still running `bound` after it said it was about to wait (it is then killed).
  struct DeadlockOutcome {
    var lines: [String] = []
    var deadlocked = false
    var signal: Int32?
  }

  /// Runs a child in `role`, reading its lines until it has printed the `lineCount` lines it
  /// prints before it waits, then gives it ``deadlockBound`` to finish.
  static func runDeadlockChild(role: String, waits lineCount: Int) throws -> DeadlockOutcome {
    // A child libdispatch stops prints a crash report; its signal is reported here instead.
    let child = childProcess(
      scenario: "main-sync-deadlock",
      environment: [deadlockChildVariable: role, "SWIFT_BACKTRACE": "enable=no"])
    let output = Pipe()
    child.standardOutput = output
    child.standardError = FileHandle.nullDevice
    try child.run()
    let descriptor = output.fileHandleForReading.fileDescriptor
    var outcome = DeadlockOutcome()
    var pending = ""
    // Reads what the child printed, for up to `timeout`; false once it closed its output.
    func read(for timeout: Duration) -> Bool {
      var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      let milliseconds = Int32(DurationArgument(timeout).seconds * 1000)
      guard poll(&entry, 1, milliseconds) > 0 else { return true }
      var buffer = [UInt8](repeating: 0, count: 4096)
      let count = Glibc.read(descriptor, &buffer, buffer.count)
      guard count > 0 else { return false }
      pending += String(decoding: buffer[..<count], as: UTF8.self)
      while let newline = pending.firstIndex(of: "\n") {
        let line = String(pending[..<newline])
        if line.hasPrefix("child: ") { outcome.lines.append(line) }
        pending = String(pending[pending.index(after: newline)...])
      }
      return true
    }
    // The child's output closes when it exits: until then it is still running.
    var closed = false
    let start = ContinuousClock.now
    while !closed && outcome.lines.count < lineCount && ContinuousClock.now - start < .seconds(10) {
      closed = !read(for: .milliseconds(100))
    }
    let waiting = ContinuousClock.now
    while !closed && ContinuousClock.now - waiting < deadlockBound {
      closed = !read(for: .milliseconds(20))
    }
    if !closed {
      outcome.deadlocked = true
      kill(child.processIdentifier, SIGKILL)
    }
    child.waitUntilExit()
    while !closed { closed = !read(for: .milliseconds(50)) }
    if child.terminationReason == .uncaughtSignal, !outcome.deadlocked {
      outcome.signal = child.terminationStatus
    }
    return outcome
  }

  static let mainSyncDeadlock = Scenario(
    name: "main-sync-deadlock",
    title: "DispatchQueue.main.sync deadlocks, shown in a child process; performAndWait does not",
    guide: "Workbook: sync on the main queue deadlocks; Table 3-2 (waitUntilDone:)",
    article: "UsingRunLoopObjects.md, Waiting for the main thread: a deadlock"
  ) { narration in
    if let role = ProcessInfo.processInfo.environment[deadlockChildVariable] {
      try deadlockChild(role)
      return
    }
    let bound = "\(Int(DurationArgument(deadlockBound).seconds * 1000)) ms"
    narration.say("A child process: its main thread joins a worker, and the worker calls")
    narration.say("DispatchQueue.main.sync, which needs the main thread. Each waits for the other;")
    narration.say("the child is killed if it is still stuck \(bound) after both said they wait.")
    let stuck = try runDeadlockChild(role: "wait-for-worker", waits: 2)
    for line in stuck.lines { narration.event(line, at: .outside) }
    narration.event(
      stuck.deadlocked ? "still running after \(bound): deadlocked, killed" : "the child ended",
      at: .outside)
    narration.expect(
      stuck.deadlocked
        && !stuck.lines.contains { $0.contains("returned") || $0.contains("joined") },
      "neither the worker's main.sync nor the main thread's join returned: a deadlock")

    narration.say("A child whose main thread calls DispatchQueue.main.sync itself:")
    let direct = try runDeadlockChild(role: "sync-on-main", waits: 1)
    for line in direct.lines { narration.event(line, at: .outside) }
    let how =
      direct.deadlocked
      ? "still running after \(bound): deadlocked, killed"
      : direct.signal.map {
        "stopped by signal \($0)\($0 == SIGILL ? " (SIGILL)" : ""): libdispatch traps a sync"
          + " onto its own queue"
      }
        ?? "exited"
    narration.event(how, at: .outside)
    narration.expect(
      (direct.deadlocked || direct.signal != nil)
        && !direct.lines.contains { $0.contains("returned") },
      "main.sync from the main thread never returned")

    narration.say("The same shape with the loop's performAndWait and a deadline: this thread")
    narration.say("joins a worker that waits for the main loop, which is not running.")
    let outcome = GuardedState("")
    let bounded = RunLoopThread(name: "worker") { _ in
      do throws(RunLoopError) {
        try EventRunLoop.main.performAndWait(name: "on-main", deadline: .now + .milliseconds(200)) {
        }
        outcome.withLock { $0 = "ran" }
      } catch {
        outcome.withLock { $0 = error.code == .timedOut ? "timedOut" : "\(error)" }
      }
      narration.event("performAndWait on the main loop: \(outcome.withLock { $0 })", at: .outside)
    }
    try bounded.start()
    try bounded.join()
    narration.expect(
      outcome.withLock { $0 } == "timedOut",
      "the worker's wait ended at its deadline with timedOut, and the join returned")

    narration.say("Run the main loop instead of blocking in join: the worker's request is served.")
    outcome.withLock { $0 = "" }
    let served = RunLoopThread(name: "worker") { _ in
      try? EventRunLoop.main.performAndWait(name: "on-main", deadline: .now + .seconds(2)) {
        narration.event("the worker's request runs on the main thread")
        outcome.withLock { $0 = "ran" }
      }
      EventRunLoop.main.perform(name: "stop") { EventRunLoop.main.stop() }
    }
    try served.start()
    _ = try EventRunLoop.main.run(mode: .default, timeout: .seconds(3))
    try served.join()
    narration.expect(outcome.withLock { $0 } == "ran", "served while the main loop ran")

    narration.say("And performAndWait on the main loop from the main thread runs inline:")
    let inline = GuardedState(false)
    try EventRunLoop.main.performAndWait(name: "inline") { inline.withLock { $0 = true } }
    narration.expect(
      inline.withLock { $0 }, "it ran before performAndWait returned, with no deadlock")
  }
}
