import Foundation
import Logging
import RunLoopCore
import RunLoopJournal
import RunLoopLogging
import RunLoopTestSupport
import RunLoopTracing
import Testing

@Suite("The user's own logs: the loop's context and the journald log handler")
struct JournalLogHandlerTests {
  @Test(.enabled(if: journaldAvailable, "no journald could be started"))
  func aLogLineInsideATracedCalloutSharesTheRunWithTheRecordsAroundIt() throws {
    let run = "log-\(UInt64.random(in: 1...UInt64.max))"
    let identifier = "runloop-log-test-\(UInt32.random(in: 0...UInt32.max))"
    let path = temporaryPath("log.jsonl")
    defer { unlink(path) }
    let tracer = LoopTracer(
      sinks: [try JSONLinesSink(path: path), try JournalSink(identifier: identifier)], runID: run)
    let provider = Logger.MetadataProvider.runLoop()
    let logger = Logger(label: "jobs") {
      JournalLogHandler(label: $0, identifier: identifier, metadataProvider: provider)
    }
    let loggedOn = try onNewThread("log-worker") { loop -> Int32 in
      tracer.attach(to: loop)
      loop.perform(name: "log-job") {
        logger.notice("job ran", metadata: ["job": "42"])
      }
      try loop.run(mode: .default, timeout: .milliseconds(20))
      return loop.threadID
    }
    tracer.close()
    let records = try TraceLog.read(contentsOf: path)
    let job = try #require(records.first { $0.calloutName == "log-job" })
    var entries: [[String: String]] = []
    #expect(
      eventually(10) {
        entries = (try? journalEntries(["RUNLOOP_RUN=\(run)"])) ?? []
        return entries.count >= records.count + 1
      })
    // Every trace record, and the log line, under the same run id.
    let lines = entries.filter { $0["RUNLOOP_RECORD"] == nil }
    #expect(entries.count == records.count + 1)
    let line = try #require(lines.first)
    #expect(line["MESSAGE"] == "job ran")
    #expect(line["PRIORITY"] == "5")
    #expect(line["SYSLOG_IDENTIFIER"] == identifier)
    #expect(line["JOB"] == "42")
    #expect(line["TID"] == String(loggedOn))
    #expect(line["RUNLOOP_LOOP"] == String(job.loop))
    #expect(line["RUNLOOP_MODE"] == "default")
    #expect(line["RUNLOOP_ITERATION"] == String(job.iteration))
    #expect(line["RUNLOOP_DEPTH"] == "1")
    #expect(line["RUNLOOP_CALLOUT_KIND"] == "block")
    #expect(line["RUNLOOP_CALLOUT_NAME"] == "log-job")
    #expect(line["SWIFT_LOG_LABEL"] == "jobs")
    #expect(line["CODE_FUNC"]?.contains("aLogLineInsideATracedCallout") == true)
    // The pass the line was logged in is the pass of the call-out record.
    #expect(records.contains { $0.iteration == job.iteration && $0.activity == "beforeTimers" })
  }

  @Test(.enabled(if: journaldAvailable, "no journald could be started"))
  func anyMetadataKeyBecomesAFieldNameJournaldKeeps() throws {
    let identifier = "runloop-log-keys-\(UInt32.random(in: 0...UInt32.max))"
    var logger = Logger(label: "keys") { JournalLogHandler(label: $0, identifier: identifier) }
    logger[metadataKey: "service"] = "billing"
    logger.warning(
      "odd keys",
      metadata: [
        "request-id": "r-1", "_private": "p", "9lives": "cat", "message": "shadowed",
        "ünïcode key": "u", String(repeating: "k", count: 80): "long",
      ])
    var entries: [[String: String]] = []
    #expect(
      eventually(10) {
        entries = (try? journalEntries(["-t", identifier])) ?? []
        return !entries.isEmpty
      })
    let entry = try #require(entries.first)
    #expect(entry["MESSAGE"] == "odd keys")
    #expect(entry["PRIORITY"] == "4")
    #expect(entry["SERVICE"] == "billing")
    #expect(entry["REQUEST_ID"] == "r-1")
    #expect(entry["PRIVATE"] == "p")
    #expect(entry["F_9LIVES"] == "cat")
    #expect(entry["METADATA_MESSAGE"] == "shadowed")
    #expect(entry["N__CODE_KEY"] == "u")
    #expect(entry[String(repeating: "K", count: 64)] == "long")
  }

  @Test func fieldNamesAreUpperCaseDigitsAndUnderscoresOnly() {
    #expect(JournalLogHandler.fieldName(for: "request-id") == "REQUEST_ID")
    #expect(JournalLogHandler.fieldName(for: "__x") == "X")
    #expect(JournalLogHandler.fieldName(for: "") == "F_")
    #expect(JournalLogHandler.fieldName(for: "7") == "F_7")
    #expect(JournalLogHandler.fieldName(for: "runloop_run") == "RUNLOOP_RUN")
    #expect(JournalLogHandler.fieldName(for: "ünï") == "N__")
    #expect(JournalLogHandler.fieldName(for: String(repeating: "a", count: 65)).count == 64)
  }

  @Test func theContextFollowsNestedRunsAndIsAbsentOutsideARun() throws {
    let provider = Logger.MetadataProvider.runLoop()
    let tracer = LoopTracer(sinks: [CollectingSink()], runID: "nested-context")
    let seen = try onNewThread("context-worker") { loop -> [Logger.Metadata] in
      tracer.attach(to: loop)
      let inner = LoopMode("inner")
      let keepAlive = CustomInputSource(name: "keep-alive") {}
      try loop.add(keepAlive, mode: inner)
      let seen = GuardedState<[Logger.Metadata]>([])
      loop.perform(name: "outer-job") {
        seen.withLock { $0.append(provider.get()) }
        loop.perform(inModes: [inner], name: "inner-job") {
          seen.withLock { $0.append(provider.get()) }
        }
        _ = try? loop.run(mode: inner, timeout: .milliseconds(10))
        seen.withLock { $0.append(provider.get()) }
      }
      try loop.run(mode: .default, timeout: .milliseconds(30))
      seen.withLock { $0.append(provider.get()) }
      return seen.withLock { $0 }
    }
    tracer.close()
    try #require(seen.count == 4)
    #expect(seen[0]["runloop_run"] == "nested-context")
    #expect(seen[0]["runloop_mode"] == "default")
    #expect(seen[0]["runloop_depth"] == "1")
    #expect(seen[0]["runloop_callout_name"] == "outer-job")
    #expect(seen[1]["runloop_mode"] == "inner")
    #expect(seen[1]["runloop_depth"] == "2")
    #expect(seen[1]["runloop_callout_name"] == "inner-job")
    // Back in the outer call-out after the nested run returned.
    #expect(seen[2]["runloop_mode"] == "default")
    #expect(seen[2]["runloop_depth"] == "1")
    #expect(seen[2]["runloop_callout_kind"] == "block")
    #expect(seen[2]["runloop_callout_name"] == "outer-job")
    // Outside any run: nothing.
    #expect(seen[3].isEmpty)
  }

  @Test func anUntracedThreadGetsNoContext() throws {
    let provider = Logger.MetadataProvider.runLoop()
    let metadata = try onNewThread("untraced") { loop -> Logger.Metadata in
      let result = GuardedState<Logger.Metadata>(["unset": "yes"])
      loop.perform { result.withLock { $0 = provider.get() } }
      try loop.run(mode: .default, timeout: .milliseconds(10))
      return result.withLock { $0 }
    }
    #expect(metadata.isEmpty)
  }

  @Test(.enabled(if: PrivateJournald.canStart, "needs root and systemd-journald"))
  func aStalledJournaldNeverHoldsALogCall() throws {
    let journald = try PrivateJournald()
    defer { journald.terminate() }
    let identifier = "runloop-log-stalled-\(UInt32.random(in: 0...UInt32.max))"
    let logger = Logger(label: "stalled") {
      JournalLogHandler(
        label: $0, identifier: identifier, destination: .socket(path: journald.socketPath))
    }
    logger.info("before the stall")
    #expect(eventually(10) { ((try? journald.entries(identifier: identifier)) ?? []).count == 1 })
    try #require(journald.stop(), "the private journald did not stop")
    let droppedBefore = JournalLogHandler.droppedLines
    // Far more lines than the socket's queue holds: with a blocking send the 11th or so
    // would wait for ever; here every call returns, and the lines journald could not take
    // are counted.
    let lines = 200
    let done = try onNewThread("logging") { _ -> Int in
      for index in 0..<lines { logger.info("line \(index)") }
      return lines
    }
    #expect(done == lines)
    let dropped = JournalLogHandler.droppedLines - droppedBefore
    #expect(dropped > 0 && dropped < UInt64(lines))
    journald.resume()
    // What the queue held arrives; lines + 1 - dropped in all.
    #expect(
      eventually(10) {
        ((try? journald.entries(identifier: identifier)) ?? []).count
          == lines + 1 - Int(dropped)
      })
  }
}
