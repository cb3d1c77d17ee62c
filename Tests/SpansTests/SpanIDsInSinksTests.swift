import Glibc
import InMemoryTracing
import Logging
import RunLoopCore
import RunLoopJournal
import RunLoopLogging
import RunLoopSpans
import RunLoopTestSupport
import RunLoopTracing
import Testing
import Tracing

/// With the spans on, the loop's own records and log metadata name the spans the tracer made.
@Suite(.serialized)
struct SpanIDsInSinksTests {
  @Test func theJSONLogNamesTheTracersSpanAndTraceOfEachCallout() async throws {
    let recorder = testTracer.recorder
    let path = "/tmp/rls-ids-\(getpid()).jsonl"
    defer { unlink(path) }
    let spans = LoopSpans()
    let sink = try JSONLinesSink(path: path)
    let tracer = LoopTracer(sinks: [sink], runID: "span-ids")
    let worker = try startLoopThread(name: "spans-json") { loop in
      loop.addInstrument(spans)
      tracer.attach(to: loop)
    }
    let loop = worker.runLoop
    let request = recorder.startSpan("json-request", context: .topLevel)
    try await ServiceContext.withValue(request.context) {
      _ = try await loop.submit(name: "json-first") {}
      _ = try await loop.submit(name: "json-second") {}
    }
    request.end()
    stopLoopThread(worker)
    tracer.close()

    let records = try TraceLog.read(contentsOf: path).filter {
      $0.calloutName?.hasPrefix("json-") == true
    }
    #expect(records.map(\.calloutName) == ["json-first", "json-second"])
    let finished = recorder.finishedSpans
    for record in records {
      let span = try #require(finished.first { $0.operationName == record.calloutName })
      #expect(record.span == span.spanID)
      #expect(record.trace == request.context.inMemorySpanContext?.traceID)
      #expect(span.traceID == record.trace)
    }
  }

  @Test func logMetadataCarriesTheSpanWithoutALoopTracer() async throws {
    let recorder = testTracer.recorder
    let spans = LoopSpans()
    let worker = try startLoopThread(name: "spans-log") { $0.addInstrument(spans) }
    defer { stopLoopThread(worker) }
    let provider = Logger.MetadataProvider.runLoop()
    let metadata = try await worker.runLoop.submit(name: "logged") { provider.get() }
    // The span ends after the body returned, which may be after the task resumed.
    #expect(
      await eventuallyAsync { recorder.finishedSpans.contains { $0.operationName == "logged" } })
    let span = try #require(recorder.finishedSpans.last { $0.operationName == "logged" })
    #expect(metadata["runloop_span"] == .string(span.spanID))
    #expect(metadata["runloop_trace"] == .string(span.traceID))
  }

  @Test(.enabled(if: journaldAvailable, "no journald could be started"))
  func oneJournalctlMatchOnATraceFindsTheRequestsLoopRecordsAndLogLines() async throws {
    let recorder = testTracer.recorder
    let identifier = "runloop-spans-\(UInt32.random(in: 0...UInt32.max))"
    let spans = LoopSpans()
    let tracer = LoopTracer(sinks: [try JournalSink(identifier: identifier)])
    let worker = try startLoopThread(name: "spans-journal") { loop in
      loop.addInstrument(spans)
      tracer.attach(to: loop)
    }
    let logger = Logger(label: "spans") { label in
      JournalLogHandler(label: label, identifier: identifier, metadataProvider: .runLoop())
    }
    let loop = worker.runLoop
    let request = recorder.startSpan("journal-request", context: .topLevel)
    try await ServiceContext.withValue(request.context) {
      _ = try await loop.submit(name: "journal-first") { logger.info("inside the first") }
      _ = try await loop.submit(name: "journal-second") {}
    }
    request.end()
    stopLoopThread(worker)
    tracer.close()
    let trace = try #require(request.context.inMemorySpanContext?.traceID)

    var entries: [[String: String]] = []
    #expect(
      eventually(10) {
        entries =
          (try? journalEntries(["SYSLOG_IDENTIFIER=\(identifier)", "RUNLOOP_TRACE=\(trace)"]))
          ?? []
        return entries.count == 3
      })
    let callouts = entries.filter { $0["RUNLOOP_RECORD"] == "callout" }
    #expect(callouts.map { $0["RUNLOOP_CALLOUT_NAME"] } == ["journal-first", "journal-second"])
    let first = try #require(recorder.finishedSpans.first { $0.operationName == "journal-first" })
    #expect(callouts.first?["RUNLOOP_SPAN"] == first.spanID)
    let lines = entries.filter { $0["MESSAGE"] == "inside the first" }
    #expect(lines.count == 1)
    #expect(lines.first?["RUNLOOP_SPAN"] == first.spanID)
  }
}
