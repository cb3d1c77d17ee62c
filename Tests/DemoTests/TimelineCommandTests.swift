import Foundation
import Glibc
import Testing

private let rsvgConvert = "/usr/bin/rsvg-convert"

@Suite("runloop-demo trace timeline: windows and stalls")
struct TimelineCommandTests {
  @Test func aroundTheSlowestCalloutTheStallIsMarkedAndTheSVGRendersToPNG() throws {
    let directory = try scratchDirectory("timeline")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = directory + "/overrun.jsonl"
    let scenario = try runDemo(["scenario", "timers-overrun", "--json-log", log])
    #expect(scenario.status == 0, "\(scenario.stdout)\(scenario.stderr)")
    let svg = directory + "/slow.svg"
    let drawn = try runDemo(["trace", "timeline", log, "--svg", svg, "--around-slowest", "1"])
    #expect(drawn.status == 0, "\(drawn.stderr)")
    #expect(drawn.stdout.contains("(window "))
    let text = try String(contentsOfFile: svg, encoding: .utf8)
    // The scenario's overrunning handler runs well past 50 ms once.
    #expect(text.contains("class=\"stall\""))
    #expect(text.contains("stall: timer: overrun"))
    // A real renderer takes it.
    if access(rsvgConvert, X_OK) == 0 {
      let png = directory + "/slow.png"
      let rendered = try runProgram(rsvgConvert, [svg, "-o", png])
      #expect(rendered.status == 0)
      let bytes = try Data(contentsOf: URL(fileURLWithPath: png))
      #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }
  }

  @Test func everyActivityOfTheTraceIsATickWithItsStepTallerForEntryAndExit() throws {
    let directory = try scratchDirectory("timeline-ticks")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = TracePassCommandTests.images.appendingPathComponent("pass-nested-runs.jsonl").path
    let svg = directory + "/ticks.svg"
    let drawn = try runDemo(["trace", "timeline", log, "--svg", svg])
    #expect(drawn.status == 0, "\(drawn.stderr)")
    let text = try String(contentsOfFile: svg, encoding: .utf8)
    let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
    let activities = lines.filter { $0.contains("\"record\":\"activity\"") }
    let ticks = text.components(separatedBy: "<line class=\"activity\"").dropFirst()
    #expect(!activities.isEmpty && ticks.count == activities.count)
    // In the trace's order, each tick carries its record's step and names it on hover.
    let steps = ticks.map { TracePassCommandTests.attribute("data-step", " " + $0) }
    let logged = activities.map { line -> String in
      guard let range = line.range(of: "\"step\":") else { return "" }
      return String(line[range.upperBound...].prefix { $0.isNumber })
    }
    #expect(steps == logged)
    #expect(ticks.filter { $0.contains("<title>entry, step 1,") }.count == 2)
    #expect(ticks.filter { $0.contains("<title>exit, step 10,") }.count == 2)
    #expect(text.contains("activity (tick)"))
  }

  @Test func theBusyHandlerPictureIsTheDrawingOfItsTraceAndShowsTheStarvedTimer() throws {
    let directory = try scratchDirectory("timeline-busy")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = TracePassCommandTests.images.appendingPathComponent("timeline-busy-handler.jsonl")
    let svg = directory + "/timeline-busy-handler.svg"
    let drawn = try runDemo(["trace", "timeline", log.path, "--svg", svg])
    #expect(drawn.status == 0, "\(drawn.stderr)")
    let text = try String(contentsOfFile: svg, encoding: .utf8)
    let committed = try String(
      contentsOf: TracePassCommandTests.resources.appendingPathComponent(
        "timeline-busy-handler.svg"),
      encoding: .utf8)
    #expect(committed == text, "run bash Docs/images/pass-pictures.sh")
    // The busy source is a stall, and no timer call-out started while it ran.
    let records = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
      .compactMap { line in
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      }
    let busy = try #require(records.first { $0["callout_name"] as? String == "busy" })
    let start = try #require(busy["ts_ns"] as? Int)
    let length = try #require(busy["duration_ns"] as? Int)
    #expect(length >= 50_000_000)
    let timers = records.filter { $0["callout_kind"] as? String == "timer" }
    #expect(timers.contains { ($0["ts_ns"] as? Int ?? 0) < start })
    #expect(
      !timers.contains {
        ($0["ts_ns"] as? Int ?? 0) > start && ($0["ts_ns"] as? Int ?? 0) < start + length
      })
    #expect(timers.contains { ($0["ts_ns"] as? Int ?? 0) > start + length })
    #expect(text.contains("stall: source: busy"))
  }

  @Test func aWindowFromToShowsOnlyItsPartOfTheAxis() throws {
    let directory = try scratchDirectory("timeline-window")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = directory + "/overrun.jsonl"
    _ = try runDemo(["scenario", "timers-overrun", "--json-log", log])
    let svg = directory + "/window.svg"
    let drawn = try runDemo([
      "trace", "timeline", log, "--svg", svg, "--from", "20ms", "--to", "0.04",
    ])
    #expect(drawn.status == 0, "\(drawn.stderr)")
    let text = try String(contentsOfFile: svg, encoding: .utf8)
    #expect(text.contains("Run-loop timeline: 20 to 40 ms of a "))
    #expect(text.contains(">20 ms</text>") && text.contains(">40 ms</text>"))
    #expect(!text.contains(">0 ms</text>"))
  }

  @Test(arguments: [
    (["--from", "50ms", "--to", "20ms"], "must be after --from"),
    (["--from", "soon"], "--from takes a time"),
    (["--around-slowest", "0"], "--around-slowest needs at least 1"),
    (["--around-slowest", "2", "--to", "1"], "leave out --from and --to"),
  ])
  func badWindowsAreRefusedWithTheReason(arguments: [String], reason: String) throws {
    let result = try runDemo(
      ["trace", "timeline", "/nonexistent", "--svg", "/tmp/x.svg"] + arguments)
    #expect(result.status != 0)
    #expect(result.stderr.contains(reason), "\(result.stderr)")
  }
}
