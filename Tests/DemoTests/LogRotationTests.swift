import Foundation
import Glibc
import RunLoopTracing
import Testing

/// The JSON log under rotation as operators do it, with the real `logrotate`, and two runs
/// given one path: nothing lost without being counted and reported, never a damaged log
/// reported as written.
@Suite("runloop-demo run: log rotation and a shared path")
struct LogRotationTests {
  static let logrotate = "/usr/sbin/logrotate"
  static var haveLogrotate: Bool { access(logrotate, X_OK) == 0 }

  /// Runs `logrotate -f` on `configuration` (with a state file of the test's own).
  static func rotate(_ configuration: String, in directory: String) throws -> DemoResult {
    let path = directory + "/logrotate.conf"
    try configuration.write(toFile: path, atomically: true, encoding: .utf8)
    return try DemoProcess(
      ["-f", "-s", directory + "/logrotate.state", path], executable: logrotate
    ).wait()
  }

  static func bytes(of path: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: path)))
  }

  /// Waits until the log at `path` has at least `count` lines.
  static func waitForLines(_ path: String, atLeast count: Int) -> Bool {
    let deadline = ContinuousClock.now + .seconds(15)
    while ContinuousClock.now < deadline {
      if let bytes = try? bytes(of: path), bytes.count(where: { $0 == 0x0A }) >= count {
        return true
      }
      usleep(20_000)
    }
    return false
  }

  @Test(.enabled(if: haveLogrotate, "needs logrotate (scripts/ensure-deps.sh)"))
  func copytruncateLeavesNoHoleAndTheRunReportsWhatTheTruncationTook() throws {
    let directory = try scratchDirectory("copytruncate")
    let log = directory + "/trace.jsonl"
    let demo = try DemoProcess(["run", "--no-journal", "--json-log", log])
    #expect(demo.waitForOutput("heartbeat 2"))
    #expect(Self.waitForLines(log, atLeast: 50))
    let rotation = try Self.rotate("\(log) {\n  copytruncate\n  rotate 1\n}\n", in: directory)
    #expect(rotation.exitedNormally && rotation.status == 0, "logrotate: \(rotation.stderr)")
    // Records written after the truncation, which the sink finds before its next write.
    let heartbeats = demo.stdout.components(separatedBy: "heartbeat ").count
    #expect(demo.waitForOutput("heartbeat \(heartbeats + 1)"))
    demo.send(SIGTERM)
    let result = demo.wait()

    #expect(result.exitedNormally && result.status == 74, "stderr: \(result.stderr)")
    #expect(!result.stdout.contains("JSON log written"))
    #expect(result.stdout.contains("JSON log INCOMPLETE"))
    // O_APPEND: the writes after the truncation start at its new end, not at the old offset.
    let current = try Self.bytes(of: log)
    #expect(!current.contains(0), "NUL bytes at the head of the truncated log")
    let lines = try TraceLog.read(contentsOf: log)
    let records = lines.filter { $0.record != .loss }
    #expect(!records.isEmpty)
    let rotated = try TraceLogReader(path: log + ".1")
    var copied: [TraceRecord] = []
    while let record = try rotated.next() { copied.append(record) }
    // What the copy holds plus what the live file holds, and the count the run reported as
    // truncated away, account for every record up to the last one.
    let message = try #require(
      result.stderr.firstMatch(of: /truncated it (\d+) times?, taking (\d+) records/),
      "stderr: \(result.stderr)")
    #expect(Int(message.output.1) == 1)
    let truncatedAway = try #require(Int(message.output.2))
    let present = Set(copied.map(\.seq)).union(records.map(\.seq))
    let last = try #require(present.max())
    let missing = Int(last) - present.count
    #expect(missing <= truncatedAway, "\(missing) records missing, \(truncatedAway) reported")
    #expect(truncatedAway > 0)
    // The live file starts with the loss record of the truncation, counting what it took.
    #expect(lines.first?.record == .loss)
    #expect(lines.filter { $0.record == .loss }.map(\.lost) == [UInt64(truncatedAway)])
    // The records after the truncation are all in the live file.
    let firstAfter = try #require(records.map(\.seq).min())
    #expect(Set(records.map(\.seq)) == Set(firstAfter...last))
  }

  @Test(.enabled(if: haveLogrotate, "needs logrotate (scripts/ensure-deps.sh)"))
  func renameAndAPostrotateSIGHUPReopenTheLogAndLoseNothing() throws {
    let directory = try scratchDirectory("rename")
    let log = directory + "/trace.jsonl"
    let demo = try DemoProcess(["run", "--no-journal", "--json-log", log])
    #expect(demo.waitForOutput("heartbeat 2"))
    let pid = demo.process.processIdentifier
    let rotation = try Self.rotate(
      "\(log) {\n  rotate 1\n  postrotate\n    kill -HUP \(pid)\n  endscript\n}\n",
      in: directory)
    #expect(rotation.exitedNormally && rotation.status == 0, "logrotate: \(rotation.stderr)")
    #expect(demo.waitForOutput("reopening the JSON log"))
    #expect(Self.waitForLines(log, atLeast: 20))
    // SIGHUP reopens; SIGTERM still ends the run.
    demo.send(SIGTERM)
    let result = demo.wait()

    #expect(result.exitedNormally && result.status == 0, "stderr: \(result.stderr)")
    #expect(result.stdout.contains("JSON log written"))
    let before = try TraceLog.read(contentsOf: log + ".1")
    let after = try TraceLog.read(contentsOf: log)
    #expect(!before.isEmpty && !after.isEmpty)
    // Every record once, in one file or the other, and the runs whole across the two.
    let problems = LogCheck(records: before + after).problems()
    #expect(problems.isEmpty, "\(problems)")
    #expect(try Self.bytes(of: log + ".1").last == 0x0A)
  }

  @Test func aSecondRunOnTheSamePathRefusesAndTheFirstLogStaysWhole() throws {
    let directory = try scratchDirectory("shared")
    let log = directory + "/trace.jsonl"
    let first = try DemoProcess(["run", "--no-journal", "--json-log", log])
    #expect(first.waitForOutput("heartbeat 1"))
    let second = try runDemo(["run", "--duration", "1", "--no-journal", "--json-log", log])
    #expect(second.exitedNormally && second.status == 73, "stderr: \(second.stderr)")
    #expect(
      second.stderr.contains(
        "is being written by another process (pid \(first.process.processIdentifier))"),
      "stderr: \(second.stderr)")
    #expect(!second.stdout.contains("JSON log written"))
    first.send(SIGTERM)
    let result = first.wait()
    #expect(result.exitedNormally && result.status == 0, "stderr: \(result.stderr)")
    let problems = try LogCheck(path: log).problems()
    #expect(problems.isEmpty, "\(problems)")
  }
}
