import Foundation
import RunLoopCore
import RunLoopTestSupport
import RunLoopTracing
import Testing

#if canImport(FoundationXML)
  import FoundationXML
#endif

@Suite("Tracing a run loop")
struct TracingTests {
  /// A source signalled before a 30 ms run: one pass performs it, the next sleeps until the
  /// timeout.
  private func tracedScenario(path: String) throws -> (loopID: UInt64, tid: Int32) {
    try onNewThread("scenario") { loop -> (UInt64, Int32) in
      let sink = try JSONLinesSink(path: path)
      let tracer = LoopTracer(sinks: [sink], runID: "scenario")
      let source = CustomInputSource(name: "work") {}
      try loop.add(source, mode: .default)
      tracer.attach(to: loop)
      source.signal()
      try loop.run(mode: .default, timeout: .milliseconds(30))
      tracer.close()
      return (loop.id, loop.threadID)
    }
  }

  @Test func deterministicScenarioWritesTheExpectedRecordSequence() throws {
    let path = temporaryPath("scenario.jsonl")
    defer { unlink(path) }
    let (loopID, tid) = try tracedScenario(path: path)
    let records = try TraceLog.read(contentsOf: path)
    let sequence = records.map { record -> String in
      switch record.record {
      case .activity: "\(record.iteration) \(record.activity!)"
      case .callout: "\(record.iteration) callout \(record.calloutKind!):\(record.calloutName!)"
      case .sleep: "\(record.iteration) sleep"
      case .stall, .recovery, .loss: "\(record.iteration) \(record.record)"
      }
    }
    #expect(
      sequence == [
        "0 entry", "1 beforeTimers", "1 beforeSources", "1 callout source:work",
        "2 beforeTimers", "2 beforeSources", "2 beforeWaiting", "2 sleep", "2 afterWaiting",
        "2 exit",
      ])
    #expect(records.map(\.seq) == Array(1...UInt64(records.count)))
    for record in records {
      #expect(record.version == TraceRecord.schemaVersion)
      #expect(record.run == "scenario")
      #expect(record.loop == loopID)
      #expect(record.tid == tid)
      #expect(record.pid == getpid())
      #expect(record.thread == "scenario")
      #expect(record.mode == "default")
      #expect(record.depth == 1)
    }
    // Timestamps never go backwards, and the wall clock is today's.
    #expect(zip(records, records.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
    let now = Int64(Date().timeIntervalSince1970 * 1e9)
    #expect(records.allSatisfy { abs($0.wallTime - now) < 60_000_000_000 })
    // The sleep lasted roughly until the 30 ms timeout; the source's signal time is its due.
    let sleep = try #require(records.first { $0.record == .sleep })
    #expect(sleep.duration! > 1_000_000)
    let callout = try #require(records.first { $0.record == .callout })
    #expect(callout.dueAt != nil && callout.lateness! >= 0)
  }

  @Test func jsonLinesUseTheDocumentedKeys() throws {
    let path = temporaryPath("keys.jsonl")
    defer { unlink(path) }
    _ = try tracedScenario(path: path)
    let text = try String(contentsOfFile: path, encoding: .utf8)
    let lines = text.split(separator: "\n")
    #expect(lines.count == 10)
    for line in lines {
      let object = try #require(
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      for key in ["v", "run", "seq", "record", "ts_ns", "wall_ns", "pid", "tid", "thread", "loop"] {
        #expect(object[key] != nil, "missing \(key)")
      }
      for key in ["mode", "iteration", "depth"] { #expect(object[key] != nil, "missing \(key)") }
      if object["record"] as? String == "activity" { #expect(object["activity"] is String) }
    }
  }

  @Test func processWideTracerSeesLoopsOfSeveralThreadsWithNestingDepth() throws {
    let path = temporaryPath("process.jsonl")
    defer { unlink(path) }
    let sink = try JSONLinesSink(path: path)
    let tracer = LoopTracer(sinks: [sink])
    tracer.attachToAllLoops()
    var loopIDs: [UInt64] = []
    for name in ["first", "second"] {
      loopIDs.append(
        try onNewThread(name) { loop -> UInt64 in
          let inner = CustomInputSource(name: "inner") {}
          let outer = CustomInputSource(name: "outer") {
            inner.signal()
            _ = try? loop.run(mode: "nested", timeout: .zero)
          }
          try loop.add(outer, mode: .default)
          try loop.add(inner, mode: "nested")
          outer.signal()
          try loop.run(mode: .default, timeout: .zero)
          return loop.id
        })
    }
    tracer.close()
    let records = try TraceLog.read(contentsOf: path).filter { loopIDs.contains($0.loop) }
    #expect(Set(records.map(\.loop)) == Set(loopIDs))
    #expect(Set(records.map(\.thread)) == ["first", "second"])
    for loopID in loopIDs {
      let nested = records.filter { $0.loop == loopID && $0.depth == 2 }
      #expect(nested.first?.activity == "entry")
      #expect(nested.allSatisfy { $0.mode == "nested" })
      #expect(nested.contains { $0.calloutName == "inner" })
      let outerCallout = records.first { $0.loop == loopID && $0.calloutName == "outer" }
      #expect(outerCallout?.depth == 1)
    }
  }

  @Test func tracerDetachedFromTheLoopRecordsNothingMore() throws {
    let path = temporaryPath("detached.jsonl")
    defer { unlink(path) }
    let sink = try JSONLinesSink(path: path)
    let tracer = LoopTracer(sinks: [sink])
    try onNewThread { loop in
      try loop.add(CustomInputSource(name: "s") {}, mode: .default)
      tracer.attach(to: loop)
      try loop.run(mode: .default, timeout: .zero)
      tracer.detach()
      try loop.run(mode: .default, timeout: .zero)
    }
    tracer.close()
    let records = try TraceLog.read(contentsOf: path)
    #expect(records.compactMap(\.activity) == ["entry", "beforeTimers", "beforeSources", "exit"])
  }

  @Test func jsonSinkLosesNothingUnderABurst() throws {
    let path = temporaryPath("burst.jsonl")
    defer { unlink(path) }
    let passes = 2_000
    try onNewThread { loop in
      let sink = try JSONLinesSink(path: path)
      let tracer = LoopTracer(sinks: [sink])
      let source = CustomInputSource(name: "s") {}
      try loop.add(source, mode: .default)
      tracer.attach(to: loop)
      for _ in 0..<passes {
        source.signal()
        try loop.run(mode: .default, timeout: .zero)
      }
      tracer.close()
    }
    let records = try TraceLog.read(contentsOf: path)
    // Each zero-timeout run: entry, beforeTimers, beforeSources, the call-out, exit.
    #expect(records.count == passes * 5)
    #expect(records.map(\.seq) == Array(1...UInt64(passes * 5)))
  }

  @Test func chromeTraceIsValidJSONWithBalancedBeginAndEnd() throws {
    let path = temporaryPath("chrome.jsonl")
    defer { unlink(path) }
    _ = try tracedScenario(path: path)
    var records = try TraceLog.read(contentsOf: path)
    // A trace that ends inside a run still balances.
    records.removeLast()
    for trace in [records, try TraceLog.read(contentsOf: path)] {
      let data = try ChromeTrace.json(from: trace)
      let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
      let events = try #require(document["traceEvents"] as? [[String: Any]])
      let phases = events.compactMap { $0["ph"] as? String }
      #expect(phases.filter { $0 == "B" }.count == 1)
      #expect(phases.filter { $0 == "B" }.count == phases.filter { $0 == "E" }.count)
      #expect(phases.first == "M")
      #expect(events.contains { $0["ph"] as? String == "X" && $0["name"] as? String == "sleep" })
      #expect(
        events.contains { $0["ph"] as? String == "X" && $0["name"] as? String == "source: work" })
      #expect(phases.filter { $0 == "i" }.count >= 6)
      let meta = try #require(events.first { $0["ph"] as? String == "M" })
      #expect(
        (meta["args"] as? [String: Any])?["name"] as? String == "scenario (loop \(trace[0].loop))")
    }
  }

  @Test func svgTimelineRendersAsXMLWithSleepingAndWorkingSpans() throws {
    let path = temporaryPath("svg.jsonl")
    defer { unlink(path) }
    _ = try tracedScenario(path: path)
    let records = try TraceLog.read(contentsOf: path)
    let svg = TraceTimeline.svg(from: records)
    final class Collector: NSObject, XMLParserDelegate {
      var classes: [String] = []
      var root: String?
      func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?,
        qualifiedName: String?, attributes: [String: String] = [:]
      ) {
        if root == nil { root = name }
        if let value = attributes["class"] { classes.append(value) }
      }
    }
    let collector = Collector()
    let parser = XMLParser(data: Data(svg.utf8))
    parser.delegate = collector
    #expect(parser.parse())
    #expect(collector.root == "svg")
    #expect(collector.classes.filter { $0 == "sleeping" }.count == 1)
    #expect(collector.classes.filter { $0 == "working" }.count == 1)
    #expect(collector.classes.filter { $0 == "waking" }.count == 1)
  }

  @Test func summaryCountsIterationsSleepAndTopCallouts() throws {
    let path = temporaryPath("summary.jsonl")
    defer { unlink(path) }
    let (loopID, _) = try tracedScenario(path: path)
    let summary = TraceSummary(records: try TraceLog.read(contentsOf: path))
    let loop = try #require(summary.loops.first)
    #expect(summary.loops.count == 1)
    #expect(loop.loop == loopID)
    #expect(loop.iterations == 2)
    #expect(loop.asleepFraction > 0.3 && loop.asleepFraction <= 1)
    #expect(loop.topCallouts.map(\.name) == ["work"])
    #expect(summary.text.contains("2 iterations"))
  }

  @Test func malformedLogIsAClearError() throws {
    #expect(throws: RunLoopError.invalidArgument("")) {
      try TraceLog.parse("{\"v\":1}\n")
    }
    #expect(throws: RunLoopError(code: .systemCallFailed, message: "")) {
      try TraceLog.read(contentsOf: "/nonexistent/trace.jsonl")
    }
  }
}
