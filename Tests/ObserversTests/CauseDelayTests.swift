import Foundation
import MetricsTestKit
import RunLoopCore
import RunLoopObservers
import RunLoopPorts
import RunLoopTestSupport
import RunLoopTracing
import Testing

@Suite("Port-message and job delays")
struct CauseDelayTests {
  @Test func portMessagesAndJobsReportSendToReceiptAndEnqueueToRunDelaysEverywhere() throws {
    let exported = TestMetrics()
    let metrics = LoopMetrics(exportingTo: exported, labelPrefix: "test.delays")
    let path = temporaryPath("delays.jsonl")
    defer { unlink(path) }
    let tracer = LoopTracer(sinks: [try JSONLinesSink(path: path)])
    let received = GuardedState(0)
    let port = try InProcessPort(name: "inbox") { _ in received.withLock { $0 += 1 } }
    let loop = try startLoopThread(name: "delays") { loop in
      metrics.attach(to: loop)
      tracer.attach(to: loop)
      try port.add(to: loop, mode: .default)
    }
    let messages = 3
    for msgid in 1...messages {
      try port.send(msgid: PortMessageID(msgid), before: .now + .seconds(5))
    }
    let jobs = GuardedState(0)
    let executor = loop.runLoop
    for _ in 0..<2 {
      Task(executorPreference: executor) { jobs.withLock { $0 += 1 } }
    }
    #expect(eventually { received.withLock { $0 } == messages && jobs.withLock { $0 } == 2 })
    // Records of a call-out are made when it returns: one more pass after them.
    let flushed = GuardedState(false)
    loop.runLoop.perform { flushed.withLock { $0 = true } }
    #expect(eventually { flushed.withLock { $0 } })
    stopLoopThread(loop)
    port.invalidate()
    tracer.close()

    let snapshot = try #require(metrics.snapshot(of: loop.runLoop))
    #expect(snapshot.delays["port"]?.count == UInt64(messages))
    #expect((snapshot.delays["job"]?.count ?? 0) >= 2)
    let dimensions = [("loop", String(loop.runLoop.id))]
    let portDelays = try exported.expectTimer(
      "test.delays.callout.delay", dimensions + [("kind", "port")])
    #expect(portDelays.values.count == messages)
    let jobDelays = try exported.expectTimer(
      "test.delays.callout.delay", dimensions + [("kind", "job")])
    #expect(jobDelays.values.count >= 2)

    let summary = TraceSummary(records: try TraceLog.read(contentsOf: path))
    let traced = try #require(summary.loops.first { $0.loop == loop.runLoop.id })
    #expect(traced.delays["port"]?.count == UInt64(messages))
    #expect(traced.delays["job"]?.count == snapshot.delays["job"]?.count)
    #expect(summary.text.contains("delay port:"))
    #expect(summary.text.contains("delay job:"))
  }
}
