import CRunLoopLinux
import Foundation
import RunLoopCore
import RunLoopJournal
import RunLoopTestSupport
import RunLoopTracing
import Testing

@Suite("Cause and effect in the JSON log and journald")
struct CauseTracingTests {
  /// Loop A runs a perform request "sender" that queues "effect" on loop B (and signals B's
  /// source "work" from a plain thread first), both traced by one tracer into `sinks`.
  /// Returns A's loop id and thread id.
  private func sendAcrossLoops(sinks: [any TraceSink]) throws -> (loop: UInt64, tid: Int32) {
    let tracer = LoopTracer(sinks: sinks)
    let source = CustomInputSource(name: "work") {}
    let b = try startLoopThread(name: "B") { loop in
      try loop.add(source, mode: .default)
      tracer.attach(to: loop)
    }
    onPlainThread { source.signalAndWakeUp() }
    let effectRan = GuardedState(false)
    let a = try onNewThread("A") { loop -> (loop: UInt64, tid: Int32) in
      tracer.attach(to: loop)
      loop.perform(name: "sender") {
        b.runLoop.perform(name: "effect") { effectRan.withLock { $0 = true } }
      }
      try loop.run(mode: .default, timeout: .zero)
      return (loop.id, crl_current_tid())
    }
    #expect(eventually { effectRan.withLock { $0 } })
    // The effect's record is made when its call-out returns: one more pass of B after it.
    let flushed = GuardedState(false)
    b.runLoop.perform(name: "after") { flushed.withLock { $0 = true } }
    #expect(eventually { flushed.withLock { $0 } })
    stopLoopThread(b)
    tracer.close()
    return a
  }

  @Test func aPerformFromACalloutOnLoopANamesThatCalloutInTheEffectsJSONRecord() throws {
    let path = temporaryPath("causes.jsonl")
    defer { unlink(path) }
    let a = try sendAcrossLoops(sinks: [try JSONLinesSink(path: path)])
    let records = try TraceLog.read(contentsOf: path)
    #expect(records.allSatisfy { $0.version == 4 })
    let sender = try #require(records.first { $0.calloutName == "sender" })
    let effect = try #require(records.first { $0.calloutName == "effect" })
    #expect(sender.span?.count == 16)
    #expect(effect.causeSpan == sender.span)
    #expect(effect.causeLoop == a.loop)
    #expect(effect.causeTid == a.tid)
    #expect(effect.causePid == nil && effect.trace == nil)
    #expect(effect.loop != a.loop)
    // Every call-out has a span of its own; only call-outs have spans.
    let spans = records.compactMap(\.span)
    #expect(spans.count == records.filter { $0.record == .callout }.count)
    #expect(Set(spans).count == spans.count)
    // The source signalled from a plain thread: a cause without a loop or a span.
    let work = try #require(records.first { $0.calloutName == "work" })
    #expect(work.causeSpan == "0000000000000000")
    #expect(work.causeLoop == nil)
    #expect(work.causeTid != nil && work.causeTid != a.tid)
  }

  @Test(.enabled(if: journaldAvailable, "no journald could be started"))
  func journaldEntriesCarryTheSpanAndCauseFields() throws {
    let identifier = "runloop-cause-\(UInt32.random(in: 0...UInt32.max))"
    let path = temporaryPath("causes-journal.jsonl")
    defer { unlink(path) }
    let journal = try JournalSink(identifier: identifier)
    let a = try sendAcrossLoops(sinks: [try JSONLinesSink(path: path), journal])
    let records = try TraceLog.read(contentsOf: path)
    let sender = try #require(records.first { $0.calloutName == "sender" })
    let senderSpan = try #require(sender.span)
    // journalctl finds the effect by the sender's span, as the guide's recipe does.
    var effects: [[String: String]] = []
    #expect(
      eventually(10) {
        let match = ["SYSLOG_IDENTIFIER=\(identifier)", "RUNLOOP_CAUSE_SPAN=\(senderSpan)"]
        effects = (try? journalEntries(match)) ?? []
        return !effects.isEmpty
      })
    #expect(effects.count == 1)
    let effect = try #require(effects.first)
    #expect(effect["RUNLOOP_CALLOUT_NAME"] == "effect")
    #expect(effect["RUNLOOP_CAUSE_LOOP"] == String(a.loop))
    #expect(effect["RUNLOOP_CAUSE_TID"] == String(a.tid))
    #expect(effect["RUNLOOP_SPAN"]?.count == 16)
    #expect(effect["RUNLOOP_CAUSE_PID"] == nil && effect["RUNLOOP_TRACE"] == nil)
    #expect(effect["MESSAGE"]?.contains("caused by thread \(a.tid) loop \(a.loop)") == true)
    let senders = try journalEntries(
      ["SYSLOG_IDENTIFIER=\(identifier)", "RUNLOOP_SPAN=\(senderSpan)"])
    #expect(senders.map { $0["RUNLOOP_CALLOUT_NAME"] } == ["sender"])
    let work = try journalEntries(
      ["SYSLOG_IDENTIFIER=\(identifier)", "RUNLOOP_CALLOUT_NAME=work"])
    #expect(work.count == 1)
    #expect(work.first?["RUNLOOP_CAUSE_SPAN"] == "0000000000000000")
    #expect(work.first?["RUNLOOP_CAUSE_LOOP"] == nil)
  }

  @Test func chromeExportDrawsAMatchedFlowFromEachCausingCalloutToItsEffect() throws {
    let path = temporaryPath("causes-chrome.jsonl")
    defer { unlink(path) }
    _ = try sendAcrossLoops(sinks: [try JSONLinesSink(path: path)])
    let records = try TraceLog.read(contentsOf: path)
    let events = ChromeTrace.events(from: records)
    let starts = events.filter { $0["ph"] as? String == "s" }
    let ends = events.filter { $0["ph"] as? String == "f" }
    // One cause in the log has a call-out span: the sender (the source's was a plain thread).
    #expect(starts.count == 1 && ends.count == 1)
    let start = try #require(starts.first)
    let end = try #require(ends.first)
    #expect(start["id"] as? Int == end["id"] as? Int)
    #expect(start["cat"] as? String == "flow" && end["cat"] as? String == "flow")
    #expect(start["name"] as? String == end["name"] as? String)
    #expect(end["bp"] as? String == "e")
    let sender = try #require(records.first { $0.calloutName == "sender" })
    let effect = try #require(records.first { $0.calloutName == "effect" })
    // Each binds inside its own call-out's slice, on that call-out's thread.
    func inside(_ event: [String: any Sendable], _ record: TraceRecord) -> Bool {
      let timestamp = event["ts"] as? Double ?? -1
      return event["tid"] as? Int == Int(record.tid)
        && timestamp >= Double(record.timestamp) / 1000
        && timestamp < Double(record.endTimestamp) / 1000
    }
    #expect(inside(start, sender))
    #expect(inside(end, effect))
  }

  @Test func chromeFlowsPairEffectsWithCausesLoggedAfterThemAndSkipUnknownCauses() throws {
    func callout(_ seq: UInt64, tid: Int32, at start: Int64, span: String, cause: String? = nil)
      -> TraceRecord
    {
      TraceRecord(
        run: "r", seq: seq, record: .callout, timestamp: start, wallTime: 0, pid: 10, tid: tid,
        thread: "t\(tid)", loop: UInt64(tid), mode: "default", iteration: 1, depth: 1,
        calloutKind: "block", calloutName: "c\(seq)", duration: 10_000, span: span,
        causeSpan: cause, causeTid: cause.map { _ in 1 })
    }
    // The cause's record comes last (its call-out ended last); it caused two effects; a
    // third effect names a call-out not in the log, a fourth was caused outside call-outs.
    let records = [
      callout(1, tid: 2, at: 5_000, span: "00000000000000b1", cause: "00000000000000a1"),
      callout(2, tid: 3, at: 6_000, span: "00000000000000b2", cause: "00000000000000a1"),
      callout(3, tid: 3, at: 30_000, span: "00000000000000b3", cause: "00000000000000ff"),
      callout(4, tid: 3, at: 40_000, span: "00000000000000b4", cause: "0000000000000000"),
      callout(5, tid: 1, at: 1_000, span: "00000000000000a1"),
    ]
    let events = ChromeTrace.events(from: records)
    let starts = events.filter { $0["ph"] as? String == "s" }
    let ends = events.filter { $0["ph"] as? String == "f" }
    #expect(starts.count == 2 && ends.count == 2)
    #expect(
      Set(starts.compactMap { $0["id"] as? Int }) == Set(ends.compactMap { $0["id"] as? Int }))
    #expect(starts.allSatisfy { $0["tid"] as? Int == 1 })
    #expect(Set(ends.compactMap { $0["tid"] as? Int }) == [2, 3])
    // The streaming writer draws the same arrows.
    let log = temporaryPath("flows.jsonl")
    let chrome = temporaryPath("flows.json")
    defer {
      unlink(log)
      unlink(chrome)
    }
    try records.map(\.jsonLine).joined().write(toFile: log, atomically: false, encoding: .utf8)
    try ChromeTrace.write(from: try TraceLogReader(path: log), toFileAt: chrome)
    let document = try JSONSerialization.jsonObject(
      with: Data(contentsOf: URL(fileURLWithPath: chrome)))
    let written = (document as? [String: Any])?["traceEvents"] as? [[String: Any]] ?? []
    #expect(written.filter { $0["ph"] as? String == "s" }.count == 2)
    #expect(written.filter { $0["ph"] as? String == "f" }.count == 2)
  }

  @Test func theTimelineDrawsAnArrowFromEachCauseToItsEffectAcrossThreadRows() throws {
    let path = temporaryPath("causes-timeline.jsonl")
    defer { unlink(path) }
    let a = try sendAcrossLoops(sinks: [try JSONLinesSink(path: path)])
    let records = try TraceLog.read(contentsOf: path)
    let svg = TraceTimeline.svg(from: records)
    let arrows = svg.components(separatedBy: "<path class=\"cause\"").dropFirst()
    // The sender's perform is the one cause with a call-out of its own in the log.
    #expect(arrows.count == 1)
    let arrow = try #require(arrows.first)
    #expect(arrow.contains("block: sender (tid \(a.tid)) caused block: effect"))
    #expect(arrow.contains("marker-end=\"url(#arrow)\""))
    #expect(svg.contains("→ caused"))
  }
}
