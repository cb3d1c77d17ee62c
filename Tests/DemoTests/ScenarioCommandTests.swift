import Foundation
import Glibc
import RunLoopObservers
import Testing

@Suite("runloop-demo scenario")
struct ScenarioCommandTests {
  /// In the order of `runloop-demo scenario --list`: one line each.
  static let names = [
    "thread-attributes",
    "raw-threads",
    "race",
    "threads-exit",
    "exit-flag",
    "modes",
    "common-modes",
    "custom-source",
    "ports",
    "check-in",
    "named-ports",
    "sockets",
    "timers-grid",
    "timers-overrun",
    "timers-tolerance",
    "observers",
    "thread-observer",
    "performs",
    "nested-runs",
    "main-queue",
    "actors",
    "stall",
    "busy-handler",
    "sync-async",
    "main-sync-deadlock",
    "queues",
    "thread-explosion",
    "joinable-exit",
  ]

  @Test func listNamesEveryScenario() throws {
    let result = try runDemo(["scenario", "--list"])
    #expect(result.status == 0)
    let listed = result.stdout.split(separator: "\n").compactMap {
      $0.split(separator: " ").first.map(String.init)
    }
    #expect(listed == Self.names)
  }

  /// Demo.md's list of the scenarios is what `scenario --list` prints, line for line.
  @Test func theDemoArticleListsEveryScenarioAsTheCommandDoes() throws {
    let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Docs/RunLoopGuide.docc/Demo.md")
    let text = try String(contentsOf: article, encoding: .utf8)
    let list = try #require(
      text.components(separatedBy: "```text\n").first {
        $0.hasPrefix("thread-attributes ")
      })
    let shown = list.components(separatedBy: "\n```").first ?? ""
    let result = try runDemo(["scenario", "--list"])
    #expect(result.status == 0)
    #expect(shown == result.stdout.trimmingCharacters(in: .newlines))
  }

  @Test(.serialized, arguments: names)
  func everyScenarioExitsZeroWithAllItsClaimsHolding(name: String) throws {
    let result = try runDemo(["scenario", name])
    #expect(result.exitedNormally && result.status == 0, "\(result.stdout)\n\(result.stderr)")
    #expect(result.stdout.contains("== \(name):"))
    #expect(result.stdout.contains("✓"))
    #expect(!result.stdout.contains("✗"), "\(result.stdout)")
  }

  @Test func allScenariosInOneProcessLeaveNothingBehindForTheNext() throws {
    let result = try runDemo(["scenario", "all"], timeout: .seconds(60))
    #expect(result.exitedNormally && result.status == 0, "\(result.stdout)\n\(result.stderr)")
    // The legend of the step column comes first, then one section per scenario.
    #expect(result.stdout.components(separatedBy: "\n== ").count == Self.names.count + 1)
    #expect(!result.stdout.contains("✗"))
  }

  @Test func aScenarioWithJSONLogTracesEveryLoopItStartsAndCanBeDrawn() throws {
    let directory = try scratchDirectory("scenario-trace")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = directory + "/ports.jsonl"
    let result = try runDemo(["scenario", "ports", "--json-log", log])
    #expect(result.exitedNormally && result.status == 0, "\(result.stdout)\n\(result.stderr)")
    let check = try LogCheck(path: log)
    #expect(check.problems().isEmpty, "\(check.problems())")
    let run = try #require(check.records.first?.run)
    #expect(result.stdout.contains("trace: run id \(run) in \(log)"))
    // The main thread's loop and the worker thread's loop, each with its ports' call-outs
    // (the main loop's own.port is the one found ready in step 5).
    let threads = Dictionary(grouping: check.records, by: \.tid)
    #expect(threads.count == 2)
    let portsByThread = threads.mapValues { records in
      Set(records.filter { $0.calloutKind == "port" }.compactMap(\.calloutName))
    }
    #expect(Set(portsByThread.values) == [["main.port", "own.port"], ["worker.port"]])
    let svg = directory + "/ports.svg"
    let drawn = try runDemo(["trace", "timeline", log, "--svg", svg])
    #expect(drawn.status == 0, "\(drawn.stderr)")
    let text = try String(contentsOfFile: svg, encoding: .utf8)
    #expect(text.contains("main.port") && text.contains("worker.port"))
  }

  @Test func aScenarioWhoseTraceLostRecordsExits74AndSaysSo() throws {
    let result = try runDemo(["scenario", "ports", "--json-log", "/dev/full"])
    #expect(result.exitedNormally && result.status == 74, "stderr: \(result.stderr)")
    #expect(result.stderr.contains("the JSON log '/dev/full' is incomplete: 0 records written"))
    #expect(result.stdout.contains("trace INCOMPLETE"))
    #expect(!result.stdout.contains("trace: run id"))
  }

  @Test func aScenarioRefusesAnEmptyJSONLogPath() throws {
    let result = try runDemo(["scenario", "ports", "--json-log", ""])
    #expect(result.status != 0)
    #expect(result.stderr.contains("--json-log needs a path"))
  }
}
