import Foundation
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// Runs every step of the tutorial "Build a traced worker service" as the reader would
/// (`runloop-tutorial N`, built because this target depends on it) and checks that each step
/// prints what the tutorial says, in the order the loops make certain.
@Suite("Tutorial: Build a traced worker service")
struct TutorialStepTests {
  /// Runs step `step` in a fresh directory; returns its output lines and the directory.
  static func run(step: Int) throws -> (lines: [String], directory: String) {
    let unique = "\(getpid())-\(step)-\(UInt32.random(in: 0...UInt32.max))"
    let directory = NSTemporaryDirectory() + "tutorial-" + unique
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let (status, output) = try GuideProgram("runloop-tutorial").run(["\(step)"], in: directory)
    #expect(status == 0, "step \(step) exited \(status)")
    return (output.split(separator: "\n").map(String.init), directory)
  }

  /// Whether `expected` occur in `lines` in this order (other lines may come between).
  static func inOrder(_ expected: [String], in lines: [String]) -> Bool {
    var rest = lines[...]
    for line in expected {
      guard let index = rest.firstIndex(of: line) else { return false }
      rest = rest[(index + 1)...]
    }
    return true
  }

  static let workerLifeline = [
    "worker: running my loop", "worker: a closure from main ran in my loop",
  ]
  static let commandsThenQuit = [
    "worker: resize", "worker: draw", "worker: my loop returned", "main: worker joined",
  ]

  @Test func stepOneRunsAClosureOnTheWorkersLoopThenStopsAndJoinsIt() throws {
    let (lines, _) = try Self.run(step: 1)
    #expect(
      lines == Self.workerLifeline + ["worker: my loop returned", "main: worker joined"],
      "\(lines)")
  }

  @Test func stepTwoRunsTheCommandsInOrderAndQuitsThroughTheBuffer() throws {
    let (lines, _) = try Self.run(step: 2)
    #expect(lines == Self.workerLifeline + Self.commandsThenQuit, "\(lines)")
  }

  @Test func stepThreeFiresTheTimerThreeTimesBeforeTheLoopReturns() throws {
    let (lines, _) = try Self.run(step: 3)
    #expect(lines.filter { $0.hasPrefix("worker: tick") }.count == 3, "\(lines)")
    #expect(
      Self.inOrder(
        Self.workerLifeline + ["worker: tick 1", "worker: tick 2", "worker: tick 3"]
          + ["worker: my loop returned", "main: worker joined"], in: lines), "\(lines)")
    #expect(Self.inOrder(Self.workerLifeline + Self.commandsThenQuit, in: lines), "\(lines)")
  }

  @Test func stepFourObservesEverySleepFollowedByAWakeUp() throws {
    let (lines, _) = try Self.run(step: 4)
    let sleeps = lines.filter { $0 == "worker: going to sleep" || $0 == "worker: woke up" }
    #expect(sleeps.count >= 8 && sleeps.count % 2 == 0, "\(lines)")
    for (index, line) in sleeps.enumerated() {
      #expect(line == (index % 2 == 0 ? "worker: going to sleep" : "worker: woke up"), "\(lines)")
    }
    // Ticks 2 and 3 come right after a wake-up: with nothing else to do, the timer is what
    // woke the loop (tick 1 may share a pass with the last command on a slow machine).
    for (index, line) in lines.enumerated()
    where line.hasPrefix("worker: tick") && line != "worker: tick 1" {
      #expect(index > 0 && lines[index - 1] == "worker: woke up", "\(lines)")
    }
  }

  @Test func stepFiveAnswersEachCommandOnTheMainThreadsPort() throws {
    let (lines, _) = try Self.run(step: 5)
    #expect(Self.inOrder(["main: done: resize", "main: done: draw"], in: lines), "\(lines)")
    #expect(Self.inOrder(["worker: resize", "main: done: resize"], in: lines), "\(lines)")
    #expect(Self.inOrder(["worker: draw", "main: done: draw"], in: lines), "\(lines)")
    #expect(lines.last == "main: worker joined", "\(lines)")
  }

  @Test func stepSixTracesBothLoopsToTheJSONLog() throws {
    let (lines, directory) = try Self.run(step: 6)
    let records = try TraceLog.read(contentsOf: directory + "/worker-service.jsonl")
    #expect(Set(records.map(\.thread)).contains("worker"), "\(Set(records.map(\.thread)))")
    #expect(Set(records.map(\.loop)).count == 2)
    let kinds = Set(records.compactMap(\.calloutKind))
    #expect(kinds.isSuperset(of: ["source", "timer", "port", "observer", "block"]), "\(kinds)")
    #expect(records.filter { $0.calloutKind == "timer" }.count == 3)
    let runLine = try #require(lines.first { $0.hasPrefix("main: tracing as run ") })
    #expect(records.allSatisfy { runLine.hasSuffix(" " + $0.run) })
  }

  @Test(
    .enabled(if: journaldAvailable, "no journald could be started (scripts/ensure-journald.sh)"))
  func stepSevenCountsTheCallOutsDrawsTheTimelineAndTheJournalHasTheRun() throws {
    let (lines, directory) = try Self.run(step: 7)
    #expect(lines.contains("trace: 3 timer call-outs"), "\(lines)")
    let svg = try String(contentsOfFile: directory + "/worker-service.svg", encoding: .utf8)
    #expect(svg.contains("<svg") && svg.contains("worker"))
    let query = try #require(lines.first { $0.hasPrefix("read the journal: journalctl ") })
    let arguments = query.dropFirst("read the journal: journalctl ".count)
      .split(separator: " ").map(String.init)
    _ = try runProgram("/usr/bin/journalctl", ["--sync"])
    let journal = try runProgram("/usr/bin/journalctl", arguments + ["--no-pager"])
    let records = try TraceLog.read(contentsOf: directory + "/worker-service.jsonl")
    let entries = journal.output.split(separator: "\n").filter { $0.hasPrefix("    RUNLOOP_SEQ=") }
    #expect(entries.count == records.count, "journal \(entries.count), log \(records.count)")
  }
}
