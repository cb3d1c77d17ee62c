import Foundation
import FoundationXML
import RunLoopCore
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// The elements of an SVG document: name, attributes and text, in order.
final class SVGElements: NSObject, XMLParserDelegate {
  var elements: [(name: String, attributes: [String: String], text: String)] = []

  init(_ svg: String) throws {
    super.init()
    let parser = XMLParser(data: Data(svg.utf8))
    parser.delegate = self
    guard parser.parse() else {
      throw RunLoopError.invalidArgument("not XML: \(String(describing: parser.parserError))")
    }
  }

  func parser(
    _ parser: XMLParser, didStartElement name: String, namespaceURI: String?,
    qualifiedName: String?, attributes: [String: String] = [:]
  ) {
    elements.append((name, attributes, ""))
  }

  func parser(_ parser: XMLParser, foundCharacters string: String) {
    if !elements.isEmpty { elements[elements.count - 1].text += string }
  }

  func texts() -> [String] {
    elements.filter { $0.name == "text" }.map {
      $0.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
  }
  func withClass(_ name: String) -> [[String: String]] {
    elements.filter { $0.attributes["class"] == name }.map(\.attributes)
  }
}

@Suite("The timeline picture")
struct TraceTimelineTests {
  /// A trace of one thread: a run in `default` from 0 to 20 ms holding a quick call-out at
  /// 1 ms, a sleep, a 2 ms call-out at 10 ms that runs a nested run in `modal` with a 60 ms
  /// timer inside... all in nanoseconds from 1 s.
  static func trace() -> [TraceRecord] {
    var seq: UInt64 = 0
    func record(
      _ kind: TraceRecord.Kind, at ms: Double, mode: String = "default", depth: Int = 1,
      activity: String? = nil, callout: (String, String)? = nil, duration ms2: Double? = nil
    ) -> TraceRecord {
      seq += 1
      return TraceRecord(
        run: "t", seq: seq, record: kind, timestamp: 1_000_000_000 + Int64(ms * 1e6), wallTime: 0,
        pid: 1, tid: 7, thread: "worker", loop: 3, mode: mode, iteration: seq, depth: depth,
        activity: activity, calloutKind: callout?.0, calloutName: callout?.1,
        duration: ms2.map { Int64($0 * 1e6) })
    }
    return [
      record(.activity, at: 0, activity: "entry"),
      record(.callout, at: 1, callout: ("block", "early"), duration: 0.1),
      record(.sleep, at: 2, duration: 8),
      record(.activity, at: 10.5, mode: "modal", depth: 2, activity: "entry"),
      record(.callout, at: 10.6, mode: "modal", depth: 2, callout: ("timer", "slow"), duration: 60),
      record(.sleep, at: 70.7, mode: "modal", depth: 2, duration: 0.2),
      record(.activity, at: 71, mode: "modal", depth: 2, activity: "exit"),
      record(.callout, at: 10, callout: ("source", "opens-modal"), duration: 62),
      record(.activity, at: 80, activity: "exit"),
    ]
  }

  @Test func nestedRunsBecomeBandsWithTheirModeAndDepth() {
    let runs = TraceTimeline.spans(from: Self.trace()).filter { $0.state == .waking }
    #expect(runs.map(\.mode) == ["default", "modal"])
    #expect(runs.map(\.depth) == [1, 2])
    #expect(runs.map { ($0.end - $0.start) / 1_000_000 } == [80, 60])
  }

  @Test func aWindowDrawsWhatOverlapsItAndLabelsTheCalloutsWithRoom() throws {
    let svg = try SVGElements(
      TraceTimeline.svg(
        from: Self.trace(), options: .init(width: 1000, from: 9_000_000, to: 14_000_000)))
    let working = svg.withClass("working")
    // "early" (at 1 ms) is outside the window; the other two overlap it.
    #expect(working.count == 2)
    let texts = svg.texts()
    #expect(texts.contains("source: opens-modal"))
    #expect(texts.contains("timer: slow"))
    #expect(!texts.contains { $0.contains("early") })
    // The axis counts from the trace's start: 9 to 14 ms.
    #expect(texts.contains("10 ms") && texts.contains("14 ms") && !texts.contains("0 ms"))
    // Both runs are shaded, the nested one in another shade.
    let bands = svg.withClass("waking")
    #expect(bands.count == 2)
    #expect(Set(bands.compactMap { $0["fill"] }).count == 2)
    #expect(texts.contains("run in 'modal'"))
  }

  @Test func longCalloutsThatNeverSleptAreMarkedAndNamedAsStalls() throws {
    let svg = try SVGElements(
      TraceTimeline.svg(from: Self.trace(), options: .init(stallThreshold: 50_000_000)))
    // "slow" (60 ms awake) is a stall; "opens-modal" (62 ms) ran a nested run that slept.
    #expect(svg.withClass("stall").count == 1)
    #expect(svg.texts().filter { $0.hasPrefix("stall: ") } == ["stall: timer: slow 60 ms"])
    let none = try SVGElements(
      TraceTimeline.svg(from: Self.trace(), options: .init(stallThreshold: 61_000_000)))
    #expect(none.withClass("stall").isEmpty)
  }

  @Test func aStallNameStopsBeforeTheNextStallMark() throws {
    // Two stalls 0.6 ms apart: at 1200 px the first one's name has no room.
    func trace(_ gap: Double) -> [TraceRecord] {
      ["first", "second"].enumerated().map { index, name in
        TraceRecord(
          run: "s", seq: UInt64(index + 1), record: .callout,
          timestamp: 1_000_000_000 + Int64(Double(index) * gap * 1e6), wallTime: 0, pid: 1,
          tid: 7, thread: "w", loop: 1, mode: "default", iteration: 1, depth: 1,
          calloutKind: "timer", calloutName: name, duration: 70_000_000)
      }
    }
    let close = try SVGElements(TraceTimeline.svg(from: trace(0.6), options: .init()))
    #expect(close.withClass("stall").count == 2)
    #expect(close.texts().filter { $0.hasPrefix("stall: ") } == ["stall: timer: second 70 ms"])
    let apart = try SVGElements(TraceTimeline.svg(from: trace(40), options: .init()))
    #expect(apart.texts().filter { $0.hasPrefix("stall: ") }.count == 2)
  }

  @Test func theWindowAroundTheSlowestCalloutsCoversThemWithAMargin() throws {
    let one = try #require(TraceTimeline.window(aroundSlowest: 1, in: Self.trace()))
    // The slowest is "opens-modal", 10 to 72 ms: a quarter of 62 ms on each side.
    #expect(one.from == 0 && one.to == 87_500_000)
    let two = try #require(TraceTimeline.window(aroundSlowest: 2, in: Self.trace()))
    #expect(two.from == 0 && two.to >= 72_000_000)
    #expect(TraceTimeline.window(aroundSlowest: 1, in: []) == nil)
  }

  @Test func aThreadWithNothingInTheWindowGetsNoRow() throws {
    var records = Self.trace()
    records.append(
      TraceRecord(
        run: "t", seq: 99, record: .sleep, timestamp: 1_200_000_000, wallTime: 0, pid: 1, tid: 8,
        thread: "late-thread", loop: 4, mode: "default", iteration: 1, depth: 1,
        duration: 1_000_000))
    let windowed = TraceTimeline.svg(from: records, options: .init(from: 0, to: 20_000_000))
    #expect(!windowed.contains("late-thread"))
    #expect(TraceTimeline.svg(from: records).contains("late-thread"))
  }

  @Test func theWatchdogsStallsAreMarkedInsteadOfLongCallouts() throws {
    var records = Self.trace()
    // The watchdog saw the loop awake 55 ms into "opens-modal"'s nested timer, and its
    // recovery 62 ms after it woke.
    records.append(
      TraceRecord(
        run: "t", seq: 20, record: .stall, timestamp: 1_010_000_000, wallTime: 0, pid: 1,
        tid: 7, thread: "worker", loop: 3, mode: "modal", iteration: 5, depth: 2,
        calloutKind: "timer", calloutName: "slow", duration: 55_000_000, threadState: "R",
        wchan: "0"))
    records.append(
      TraceRecord(
        run: "t", seq: 21, record: .recovery, timestamp: 1_010_000_000, wallTime: 0, pid: 1,
        tid: 7, thread: "worker", loop: 3, mode: "default", iteration: 6, depth: 1,
        duration: 62_000_000))
    let svg = try SVGElements(TraceTimeline.svg(from: records, options: .init(width: 4000)))
    #expect(svg.withClass("stall").count == 1)
    #expect(svg.texts().filter { $0.hasPrefix("stall: ") } == ["stall: timer: slow awake 55 ms"])
    #expect(svg.withClass("stalled").count == 1)
    #expect(svg.texts().contains("stall (watchdog)"))
  }

  @Test func theChromeExportShowsAStallWhereItWasSeenAndTheTimeAwake() throws {
    let stall = TraceRecord(
      run: "t", seq: 1, record: .stall, timestamp: 1_000_000_000, wallTime: 0, pid: 1, tid: 7,
      thread: "worker", loop: 3, mode: "default", iteration: 5, depth: 1, calloutKind: "block",
      calloutName: "stuck", duration: 120_000_000, threadState: "S", wchan: "futex_wait_queue")
    let recovery = TraceRecord(
      run: "t", seq: 2, record: .recovery, timestamp: 1_000_000_000, wallTime: 0, pid: 1,
      tid: 7, thread: "worker", loop: 3, mode: "default", iteration: 5, depth: 1,
      duration: 300_000_000)
    let events = ChromeTrace.events(from: [stall, recovery])
    let seen = try #require(
      events.first { $0["cat"] as? String == "stall" && $0["ph"] as? String == "i" })
    #expect(seen["name"] as? String == "stall: block stuck")
    #expect(seen["ts"] as? Double == 1_120_000)  // where the watchdog saw it, in µs
    let args = try #require(seen["args"] as? [String: any Sendable])
    #expect(
      args["thread_state"] as? String == "S" && args["wchan"] as? String == "futex_wait_queue")
    let awake = try #require(events.first { $0["name"] as? String == "stalled" })
    #expect(awake["ph"] as? String == "X" && awake["dur"] as? Double == 300_000)
    #expect(awake["ts"] as? Double == 1_000_000)
  }

  @Test func aCalloutThatRunsTheLoopNestedStaysVisibleAroundTheNestedRun() throws {
    let svg = try SVGElements(
      TraceTimeline.svg(
        from: Self.trace(), options: .init(width: 1000, from: 9_000_000, to: 14_000_000)))
    func box(_ attributes: [String: String]) -> (top: Double, bottom: Double) {
      let top = Double(attributes["y"] ?? "") ?? .nan
      return (top, top + (Double(attributes["height"] ?? "") ?? .nan))
    }
    let callouts = svg.withClass("working").map(box)
    let runs = svg.withClass("waking").map(box)
    // In drawing order: the outer run, the call-out that opens the modal, the modal run.
    #expect(callouts.count == 2 && runs.count == 2)
    let outer = callouts[0]
    let nested = runs[1]
    #expect(outer.top < nested.top && nested.bottom < outer.bottom, "\(outer) \(nested)")
    // And the nested run's call-out is inside the nested run.
    #expect(nested.top < callouts[1].top && callouts[1].bottom < nested.bottom)
  }

  @Test func aLabelTooLongForItsCalloutShowsTheNameAndTheWholeLabelOnHover() throws {
    let svg = try SVGElements(TraceTimeline.svg(from: Self.trace(), options: .init(width: 400)))
    let texts = svg.texts()
    #expect(texts.contains("opens-modal"), "\(texts)")
    #expect(!texts.contains { $0.hasPrefix("source: o") })
    let titles = svg.elements.filter { $0.name == "title" }.map {
      $0.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    #expect(titles.filter { $0 == "source: opens-modal" }.count == 1, "\(titles)")
  }
}
