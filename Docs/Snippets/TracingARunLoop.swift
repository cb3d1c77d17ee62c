import CoreMetrics
import Foundation
import Logging
import RunLoopCore
import RunLoopJournal
import RunLoopLogging
import RunLoopObservers
import RunLoopTracing

// The code of TracingARunLoop.md.

package func tracingAttachExample() throws {
  // snippet: tracing-attach
  let sink = try JSONLinesSink(path: "/tmp/loop.jsonl")
  let journal = try JournalSink(identifier: "my-service")
  let tracer = LoopTracer(sinks: [sink, journal])
  tracer.attachToAllLoops()  // or tracer.attach(to: someLoop)
  // ... the program runs ...
  tracer.close()  // detaches, then each sink writes what it has queued
  // end snippet
}

package func tracingPerRequestExample() throws {
  // snippet: tracing-per-request
  let shared = try JSONLinesSink(path: "/tmp/requests.jsonl")  // for the whole process

  func handle(_ request: String, on loop: EventRunLoop) throws {
    let tracer = LoopTracer(sinks: [shared], runID: request)
    tracer.attach(to: loop)
    defer { tracer.detach() }  // not close(): that would close `shared` for every tracer
    try loop.run(mode: .default, timeout: .milliseconds(10))
  }
  // end snippet
}

package func tracingLoggingExample(worker: RunLoopThread) throws {
  // snippet: tracing-logging
  // Before attaching tracers: the provider turns the loop context on.
  LoggingSystem.bootstrap(
    { label, provider in
      JournalLogHandler(label: label, identifier: "my-service", metadataProvider: provider)
    },
    metadataProvider: .runLoop())
  let tracer = LoopTracer(sinks: [try JournalSink(identifier: "my-service")])
  tracer.attachToAllLoops()
  let logger = Logger(label: "jobs")
  worker.runLoop.perform(name: "job-42") { logger.info("job done") }  // RUNLOOP_CALLOUT_NAME=job-42
  // end snippet
}

package func tracingWatchdogExample(tracer: LoopTracer) {
  // snippet: tracing-watchdog
  let watchdog = StallWatchdog(threshold: .milliseconds(200), reportingTo: tracer)
  watchdog.attachToAllLoops()
  // end snippet
}

package func tracingMetricsExample(worker: RunLoopThread) {
  // snippet: tracing-metrics
  // Or LoopMetrics() for snapshots only.
  let metrics = LoopMetrics(exportingTo: MetricsSystem.factory)
  metrics.attach(to: worker.runLoop)  // from the loop's thread, or once it runs
  // ...
  if let snapshot = metrics.snapshot(of: worker.runLoop) {
    print(snapshot.iterations, snapshot.asleepFraction)
    print(snapshot.callouts["timer"]?.count ?? 0, snapshot.timerLateness.p99)
    print(snapshot.signalToPerform.p50)
  }
  // end snippet
}

package func tracingPicturesExample() throws {
  // snippet: tracing-pictures
  let records = try TraceLog.read(contentsOf: "/tmp/loop.jsonl")
  try ChromeTrace.json(from: records).write(to: URL(fileURLWithPath: "/tmp/loop.trace.json"))
  // Or streamed, for a log of any size:
  try ChromeTrace.write(
    from: try TraceLogReader(path: "/tmp/loop.jsonl"), toFileAt: "/tmp/loop.trace.json")
  try TraceTimeline.svg(from: records).write(
    toFile: "/tmp/loop.svg", atomically: true, encoding: .utf8)
  print(TraceSummary(records: records).text)
  // end snippet
}
