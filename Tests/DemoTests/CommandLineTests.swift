import Foundation
import Testing

@Suite("runloop-demo command line")
struct CommandLineTests {
  @Test func helpTeachesTheCommandsAndWhatARunLoopIs() throws {
    let result = try runDemo(["--help"])
    #expect(result.status == 0)
    for text in ["run loop", "run", "scenario", "countdown", "trace", "journalctl -t runloop-demo"]
    {
      #expect(result.stdout.contains(text), "help lacks '\(text)'")
    }
    let run = try runDemo(["run", "--help"])
    #expect(run.status == 0)
    #expect(run.stdout.contains("check-in protocol") && run.stdout.contains("--duration"))
  }

  static let badInvocations: [[String]] = [
    ["run", "--workers", "0"],
    ["run", "--bogus"],
    ["run", "--duration", "soon"],
    ["run", "--duration", "0x10", "--no-journal"],
    ["run", "--duration", "1e1", "--no-journal"],
    ["run", "--duration", "1", "--no-journal", "--json-log", "/nonexistent-dir/x.jsonl"],
    ["run", "--journal-rate-limit", "0/30s"],
    ["run", "--journal-rate-limit", "100"],
    ["run", "--journal-rate-limit", "100/0"],
    ["run", "--journal-rate-limit", "-5/30s"],
    ["run", "--journal-rate-limit", "100/30s/1"],
    ["scenario", "no-such-scenario"],
    ["scenario"],
    ["countdown", "0"],
    ["countdown"],
    ["trace", "summary", "/nonexistent/trace.jsonl"],
    ["trace", "summary", "/"],
    ["trace", "summary", "/etc/hostname"],
    ["trace", "export", "/etc/hostname"],
    ["trace", "timeline", "/nonexistent", "--svg", "/tmp/x.svg"],
    ["no-such-command"],
  ]

  @Test func aNegativeWorkerCountIsNamedNotTakenForAFlag() throws {
    let result = try runDemo(["run", "--workers", "-1"])
    #expect(result.exitedNormally && result.status != 0)
    #expect(
      result.stderr.contains("--workers must be between 1 and 16, not -1"), "\(result.stderr)")
    #expect(!result.stderr.contains("Missing value"))
  }

  @Test(arguments: [["run", "--duration", "-1"], ["top", "/tmp/x.jsonl", "--duration", "-1"]])
  func aNegativeDurationIsNamedAsInvalidNotMissing(arguments: [String]) throws {
    let result = try runDemo(arguments)
    #expect(result.exitedNormally && result.status == 64)
    #expect(
      result.stderr.contains("The value '-1' is invalid for '--duration <duration>'"),
      "\(result.stderr)")
    #expect(!result.stderr.contains("Missing value"))
  }

  @Test(arguments: badInvocations)
  func badFlagsAndUnreadablePathsExitNonZeroWithAMessage(arguments: [String]) throws {
    let result = try runDemo(arguments)
    #expect(result.exitedNormally, "it crashed")
    #expect(result.status != 0)
    #expect(result.stderr.contains("Error:"), "stderr: \(result.stderr)")
    #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("Stack dump"))
  }
}
