import Foundation
import RunLoopTracing
import Testing

/// `runloop-demo trace pass`: one pass drawn as the guide's sequence of events, read back
/// from the SVG's marks.
@Suite("runloop-demo trace pass: one pass as the sequence of events")
struct TracePassCommandTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
  static let images = root.appendingPathComponent("Docs/images")
  static let resources = root.appendingPathComponent("Docs/RunLoopGuide.docc/Resources")

  /// One mark of the picture, in row order.
  struct Mark: Equatable {
    let kind: String
    let seq: Int
    let step: Int?
    let depth: Int
  }

  /// The marks of a pass picture, in the order of its rows.
  static func marks(_ svg: String) throws -> [Mark] {
    try svg.components(separatedBy: "<g class=\"record ").dropFirst().map { element in
      let kind = String(element.prefix { $0 != "\"" })
      let seq = try #require(Int(attribute("data-seq", element)))
      let depth = try #require(Int(attribute("data-depth", element)))
      return Mark(kind: kind, seq: seq, step: Int(attribute("data-step", element)), depth: depth)
    }
  }

  static func attribute(_ name: String, _ element: String) -> String {
    guard let start = element.range(of: " \(name)=\"") else { return "" }
    return String(element[start.upperBound...].prefix { $0 != "\"" })
  }

  /// The labels written beside the marks, in row order.
  static func labels(_ svg: String) -> [String] {
    svg.components(separatedBy: "<text class=\"label\"").dropFirst().map { element in
      String(element.drop { $0 != ">" }.dropFirst().prefix { $0 != "<" })
    }
  }

  /// The steps in row order, repeats of one step in a row made one.
  static func path(_ marks: [Mark]) -> [Int] {
    var path: [Int] = []
    for step in marks.compactMap(\.step) where path.last != step { path.append(step) }
    return path
  }

  @Test func aPassThatRunsANestedRunShowsTheOuterStepsAroundTheNestedRunsOwn() throws {
    let directory = try scratchDirectory("pass-nested")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = Self.images.appendingPathComponent("pass-nested-runs.jsonl").path
    let svg = directory + "/pass.svg"
    let drawn = try runDemo(["trace", "pass", log, "--svg", svg])
    #expect(drawn.status == 0, "\(drawn.stderr)")
    let text = try String(contentsOfFile: svg, encoding: .utf8)
    let marks = try Self.marks(text)
    let outer = marks.filter { $0.depth == 1 }
    let nested = marks.filter { $0.depth == 2 }
    // The outer pass: 2, 3, about to sleep, asleep, woke, then the timer that opens the
    // dialog at step 9, whose end closes the picture back at step 9.
    #expect(outer.map(\.step) == [2, 3, 6, 7, 8, 9, 9])
    #expect(
      outer.map(\.kind) == [
        "activity", "activity", "activity", "sleep", "activity",
        "callout", "callout-end",
      ])
    // The nested run, between the outer call-out and its end: entered at step 1, passes of
    // 2 3 6 7 8 9, left at step 10.
    let nestedRows = try #require(marks.firstIndex { $0.depth == 2 })
    #expect(marks[nestedRows - 1].kind == "callout" && marks.last?.kind == "callout-end")
    #expect(nested.first?.step == 1 && nested.last?.step == 10)
    let nestedPath = Self.path(nested)
    #expect(nestedPath.first == 1 && nestedPath.last == 10)
    #expect(Array(nestedPath.dropFirst().prefix(6)) == [2, 3, 6, 7, 8, 9])
    #expect(!nested.contains { $0.step == 4 || $0.step == 5 })
    // The outer call-out's label shows on its own row and on the row that ends it, and a
    // frame holds the nested run.
    let labels = Self.labels(text)
    #expect(labels.contains { $0.hasPrefix("timer: open-dialog ") })
    #expect(labels.last?.hasPrefix("end of timer: open-dialog") == true)
    #expect(text.components(separatedBy: "class=\"nesting-callout\"").count == 2)
    #expect(text.contains("class=\"depth\" data-depth=\"2\""))
    // The committed picture is this drawing of the committed trace.
    let committed = try String(
      contentsOf: Self.resources.appendingPathComponent("pass-nested-run.svg"), encoding: .utf8)
    #expect(committed == text, "run bash Docs/images/pass-pictures.sh")
  }

  @Test func theCommandBufferPicturesAreTheDrawingsOfTheirTrace() throws {
    let directory = try scratchDirectory("pass-committed")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = Self.images.appendingPathComponent("pass-custom-source.jsonl").path
    for (iteration, picture, steps) in [
      ("1", "pass-woken.svg", [1, 2, 3, 6, 7, 8]), ("2", "pass-source.svg", [2, 3, 4]),
    ] {
      let svg = directory + "/" + picture
      let drawn = try runDemo(["trace", "pass", log, "--svg", svg, "--iteration", iteration])
      #expect(drawn.status == 0, "\(drawn.stderr)")
      let text = try String(contentsOfFile: svg, encoding: .utf8)
      #expect(Self.path(try Self.marks(text)) == steps, "\(picture)")
      let committed = try String(
        contentsOf: Self.resources.appendingPathComponent(picture), encoding: .utf8)
      #expect(committed == text, "\(picture): run bash Docs/images/pass-pictures.sh")
    }
  }

  @Test func aFreshCustomSourceRunIsWokenWithNothingToHandleThenFiresTheSourceAtStepFour()
    throws
  {
    let directory = try scratchDirectory("pass-fresh")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = directory + "/source.jsonl"
    let scenario = try runDemo(["scenario", "custom-source", "--json-log", log])
    #expect(scenario.status == 0, "\(scenario.stdout)\(scenario.stderr)")
    let woken = directory + "/woken.svg"
    let first = try runDemo(["trace", "pass", log, "--svg", woken, "--iteration", "1"])
    #expect(first.status == 0, "\(first.stderr)")
    #expect(first.stdout.contains("steps 1 2 3 6 7 8"), "\(first.stdout)")
    let text = try String(contentsOfFile: woken, encoding: .utf8)
    let sleep = try #require(Self.labels(text).first { $0.hasPrefix("sleep ") })
    #expect(sleep.hasSuffix("woken with nothing to handle at step 9: back to step 2"))
    let source = directory + "/source.svg"
    let second = try runDemo(["trace", "pass", log, "--svg", source, "--iteration", "2"])
    #expect(second.status == 0, "\(second.stderr)")
    let marks = try Self.marks(try String(contentsOfFile: source, encoding: .utf8))
    // The source's call-out at step 4 (the scenario's observers make call-outs at 2 and 6).
    #expect(marks.contains { $0.kind == "callout" && $0.step == 4 }, "\(marks)")
    #expect(Self.path(marks).prefix(3) == [2, 3, 4])
  }

  @Test func aPortFoundReadyBeforeTheSleepIsMarkedAtStepFiveBeforeItsCalloutAtStepNine() throws {
    let directory = try scratchDirectory("pass-port")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    // The committed picture is the drawing of its trace.
    let committedLog = Self.images.appendingPathComponent("pass-ports.jsonl").path
    let redrawn = directory + "/pass-port-ready.svg"
    let again = try runDemo(
      ["trace", "pass", committedLog, "--svg", redrawn, "--iteration", "4", "--loop", "1"])
    #expect(again.status == 0, "\(again.stderr)")
    let committed = try String(
      contentsOf: Self.resources.appendingPathComponent("pass-port-ready.svg"), encoding: .utf8)
    #expect(
      committed == (try String(contentsOfFile: redrawn, encoding: .utf8)),
      "run bash Docs/images/pass-pictures.sh")
    // A fresh run of the scenario: the pass that handles own.port reported 2, 3 and 9.
    let log = directory + "/ports.jsonl"
    let scenario = try runDemo(["scenario", "ports", "--json-log", log])
    #expect(scenario.status == 0, "\(scenario.stdout)\(scenario.stderr)")
    let records = try TraceLog.read(contentsOf: log)
    let handled = try #require(records.first { $0.calloutName == "own.port" })
    let svg = directory + "/port.svg"
    let drawn = try runDemo(
      [
        "trace", "pass", log, "--svg", svg, "--iteration", String(handled.iteration), "--loop",
        String(handled.loop),
      ])
    #expect(drawn.status == 0, "\(drawn.stderr)")
    #expect(drawn.stdout.contains("steps 2 3 5 9"), "\(drawn.stdout)")
    let marks = try Self.marks(try String(contentsOfFile: svg, encoding: .utf8))
    let found = try #require(marks.firstIndex { $0.kind == "port-found" })
    #expect(marks[found].step == 5 && marks[found].seq == Int(handled.seq))
    #expect(marks[found + 1] == Mark(kind: "callout", seq: Int(handled.seq), step: 9, depth: 1))
    #expect(marks.filter { $0.kind == "port-found" }.count == 1)
  }

  /// A pass that slept and was woken by its port went through steps 6 to 8: no step 5 mark.
  @Test func aPassWokenFromItsSleepByAPortHasNoStepFiveMark() throws {
    let log = Self.images.appendingPathComponent("pass-ports.jsonl").path
    let records = try TraceLog.read(contentsOf: log)
    // The worker's first pass: it sleeps, and worker.port's messages wake it.
    let pass = records.filter { $0.loop == 2 && $0.iteration == 1 }
    #expect(pass.contains { $0.record == .sleep })
    #expect(pass.contains { $0.calloutName == "worker.port" && $0.step == 9 })
    let directory = try scratchDirectory("pass-no-five")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let svg = directory + "/woken.svg"
    let drawn = try runDemo(
      ["trace", "pass", log, "--svg", svg, "--iteration", "1", "--loop", "2"])
    #expect(drawn.status == 0, "\(drawn.stderr)")
    let marks = try Self.marks(try String(contentsOfFile: svg, encoding: .utf8))
    #expect(marks.contains { $0.kind == "callout" && $0.step == 9 })
    #expect(!marks.contains { $0.kind == "port-found" || $0.step == 5 }, "\(marks)")
  }

  @Test func aPassTheLogDoesNotHoldIsRefusedWithThePassesItHas() throws {
    let log = Self.images.appendingPathComponent("pass-custom-source.jsonl").path
    let result = try runDemo(["trace", "pass", log, "--svg", "/tmp/x.svg", "--iteration", "99"])
    #expect(result.status != 0)
    #expect(result.stderr.contains("has no pass 99 of the first loop: its passes are 1 to "))
    let other = try runDemo(["trace", "pass", log, "--svg", "/tmp/x.svg", "--loop", "7"])
    #expect(other.status != 0)
    #expect(other.stderr.contains("has no pass of loop 7"), "\(other.stderr)")
  }
}

/// SequenceOfEvents.md shows the `trace pass` commands that made its pictures and what they
/// print: run on the committed trace, they print exactly that.
@Suite("SequenceOfEvents.md's trace pass commands")
struct TracePassArticleTests {
  @Test func theArticlesTracePassCommandsPrintWhatItShows() throws {
    let article = try String(
      contentsOf: TracePassCommandTests.root.appendingPathComponent(
        "Docs/RunLoopGuide.docc/SequenceOfEvents.md"),
      encoding: .utf8)
    let lines = article.components(separatedBy: "\n")
    let commands = lines.indices.filter { lines[$0].hasPrefix("$ runloop-demo trace pass ") }
    #expect(commands.count == 3)
    let directory = try scratchDirectory("pass-article")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    for index in commands {
      var arguments = lines[index].split(separator: " ").dropFirst(2).map(String.init)
      let log = TracePassCommandTests.images.appendingPathComponent(arguments[2]).path
      let svgIndex = try #require(arguments.firstIndex(of: "--svg")) + 1
      let shownSVG = arguments[svgIndex]
      arguments[2] = log
      arguments[svgIndex] = directory + "/" + shownSVG
      let result = try runDemo(arguments)
      #expect(result.status == 0, "\(result.stderr)")
      let printed = result.stdout.trimmingCharacters(in: .newlines)
        .replacingOccurrences(of: directory + "/", with: "")
      #expect(printed == lines[index + 1], "\(lines[index])")
    }
  }
}
