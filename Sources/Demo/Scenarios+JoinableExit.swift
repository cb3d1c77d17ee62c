import Foundation
import Glibc
import RunLoopCore

extension Scenarios {
  /// Set in the child processes of `joinable-exit`: how the child's main thread ends.
  static let exitChildVariable = "RUNLOOP_DEMO_EXIT_CHILD"

  /// The child's side: a thread that "saves data" a second after it starts, then the main
  /// thread exits at once (`exit-now`, `detached`) or joins the thread first (`join`). The
  /// exit is `_exit`: the process ends there, as the lesson says, and not after exit-time
  /// work (a coverage build writes its profile then) that could outlast the saver.
  static func exitChild(_ role: String) throws -> Never {
    let saver = RunLoopThread(name: "saver", detached: role == "detached") { _ in
      usleep(1_000_000)
      StandardStreams.out("child: saver wrote its data")
    }
    try saver.start()
    if role == "join" {
      StandardStreams.out("child: main thread joins the saver")
      try saver.join()
    } else if role == "detached" {
      let refused = (try? saver.join()) == nil
      StandardStreams.out("child: join() on the detached saver \(refused ? "refused" : "waited")")
    }
    StandardStreams.out("child: main thread exits the process")
    _exit(0)
  }

  /// Runs the `joinable-exit` child in `role` and returns the lines it printed, with a last
  /// line saying how it ended when that was not exit status 0.
  static func runExitChild(_ role: String) throws -> [String] {
    // ThreadSanitizer's exit sleeps a second by default (its `atexit_sleep_ms`), long enough
    // for the saver to finish: a demo built with it would show every saver writing.
    let sanitizer = ProcessInfo.processInfo.environment["TSAN_OPTIONS"].map { $0 + ":" } ?? ""
    let child = childProcess(
      scenario: "joinable-exit",
      environment: [exitChildVariable: role, "TSAN_OPTIONS": sanitizer + "atexit_sleep_ms=0"])
    let output = Pipe()
    child.standardOutput = output
    try child.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    child.waitUntilExit()
    var lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
      .filter { $0.hasPrefix("child: ") }
    if child.terminationReason != .exit || child.terminationStatus != 0 {
      let how = child.terminationReason == .uncaughtSignal ? "signal" : "exit status"
      lines.append("child: ended by \(how) \(child.terminationStatus)")
    }
    return lines
  }

  static let joinableExit = Scenario(
    name: "joinable-exit",
    title: "Joinable threads must be joined before the process exits; a detached one is cut off",
    guide: "Thread Management > Configuring the Detached State of a Thread",
    article: "ThreadManagement.md, Creating and starting a thread"
  ) { narration in
    if let role = ProcessInfo.processInfo.environment[exitChildVariable] {
      try exitChild(role)
    }
    narration.say("Three child processes; in each, a 'saver' thread writes its data a second after")
    narration.say("it starts, and the main thread then ends the process in its own way.")
    for (role, what) in [
      ("exit-now", "a joinable saver, and the main thread exits without joining it"),
      ("join", "a joinable saver, joined before the exit"),
      ("detached", "a detached saver, which cannot be joined"),
    ] {
      narration.say("\(what):")
      let lines = try runExitChild(role)
      for line in lines { narration.event(line, at: .outside) }
      let saved = lines.firstIndex(of: "child: saver wrote its data")
      // The exit line must be the child's last: a child that ended any other way adds one.
      let exited = lines.last == "child: main thread exits the process" ? lines.count - 1 : nil
      switch role {
      case "join":
        narration.expect(
          saved != nil && exited != nil && saved! < exited!,
          "joined, the saver finished its work before the process exited")
      case "detached":
        narration.expect(
          saved == nil && exited != nil
            && lines.contains("child: join() on the detached saver refused"),
          "the detached saver cannot be waited for, and the exit cut it off")
      default:
        narration.expect(
          saved == nil && exited != nil,
          "not joined, the saver was ended with the process before it wrote anything")
      }
    }
    narration.say("On Linux the exit ends every thread, joinable or not: only a join on the")
    narration.say("exit path lets work that must finish (saving to disk) finish.")
  }
}
