import CoreMetrics
import Foundation
import MetricsTestKit
import RunLoopCore
import RunLoopObservers
import RunLoopTestSupport
import RunLoopTracing
import Testing

@Suite("Utilization and delay")
struct LoopUtilizationTests {
  /// Runs a loop with `ticks` timer firings 5 ms apart, each burning `work`; returns its
  /// snapshot and id.
  private func measuredLoop(
    _ metrics: LoopMetrics, ticks: Int, work: Duration
  ) throws -> (LoopMetricsSnapshot, UInt64) {
    try onNewThread("utilization") { loop -> (LoopMetricsSnapshot, UInt64) in
      let fired = GuardedState(0)
      let provider = TickProvider(interval: .milliseconds(5), count: ticks) {
        burn(work)
        fired.withLock { $0 += 1 }
      }
      loop.addDeadlineSource(provider)
      metrics.attach(to: loop)
      let deadline = ContinuousClock.now + .seconds(10)
      while fired.withLock({ $0 }) < ticks, ContinuousClock.now < deadline {
        try loop.run(mode: .default, timeout: .milliseconds(50))
      }
      metrics.detach()
      return (try #require(metrics.snapshot(of: loop)), loop.id)
    }
  }

  @Test func utilizationIsBusyOverBusyPlusAsleepAndGrowsWithTheWork() throws {
    let exported = TestMetrics()
    let metrics = LoopMetrics(exportingTo: exported, labelPrefix: "u")
    let (idle, idleID) = try measuredLoop(metrics, ticks: 6, work: .zero)
    let (busy, _) = try measuredLoop(metrics, ticks: 6, work: .milliseconds(15))
    for snapshot in [idle, busy] {
      let expected =
        Double(snapshot.busyNanoseconds)
        / Double(snapshot.busyNanoseconds + snapshot.asleepNanoseconds)
      #expect(snapshot.utilization == expected)
      #expect(snapshot.utilization > 0 && snapshot.utilization < 1)
    }
    // Each firing of the busy loop burns 15 ms of 5 ms periods: it never gets to sleep for
    // long, while the idle one sleeps between firings.
    #expect(busy.utilization > idle.utilization)
    // The gauge is set at every sleep, with values from 0 to 1.
    let gauge = try exported.expectRecorder("u.utilization", [("loop", String(idleID))])
    #expect(!gauge.values.isEmpty)
    #expect(gauge.values.allSatisfy { $0 >= 0 && $0 <= 1 })
  }

  @Test func delaysAreKeptPerCalloutKindFromTheDueTime() throws {
    let exported = TestMetrics()
    let metrics = LoopMetrics(exportingTo: exported, labelPrefix: "d")
    let jobs = 4
    let (snapshot, loopID) = try onNewThread("delays") { loop -> (LoopMetricsSnapshot?, UInt64) in
      metrics.attach(to: loop)
      let performed = GuardedState(0)
      let source = CustomInputSource(name: "signalled") { performed.withLock { $0 += 1 } }
      try loop.add(source, mode: .default)
      source.signal()
      try loop.run(mode: .default, timeout: .zero)
      // A module's own kind of call-out, with its due time: the job was queued 1 ms ago.
      for index in 0..<jobs {
        let queued = ContinuousClock.now - .milliseconds(1)
        loop.withCallout(CalloutKind("job"), name: "job-\(index)", dueAt: queued) {}
      }
      metrics.detach()
      return (metrics.snapshot(of: loop), loop.id)
    }
    let measured = try #require(snapshot)
    #expect(measured.delays["source"]?.count == 1)
    let job = try #require(measured.delays["job"])
    #expect(job.count == UInt64(jobs))
    // A due time given as a `ContinuousClock` instant meets the loop's clock reading through
    // one pair of readings taken together, exact to about a microsecond: hence the 10 µs.
    let queuedFor: Int64 = 1_000_000 - 10_000
    #expect(job.p50 >= queuedFor && job.p50 <= job.p99 && job.p99 <= job.max, "\(job)")
    // A call-out with no due time has no delay.
    #expect(measured.delays["observer"] == nil)
    let timer = try exported.expectTimer(
      "d.callout.delay", [("loop", String(loopID)), ("kind", "job")])
    #expect(timer.values.count == jobs)
    #expect(timer.values.allSatisfy { $0 >= queuedFor }, "\(timer.values)")
  }

  @Test func traceSummaryShowsUtilizationAndTheDelayOfEachKind() {
    func record(
      _ seq: UInt64, _ kind: TraceRecord.Kind, at ms: Int64, activity: String? = nil,
      callout: String? = nil, duration: Int64? = nil, lateMs: Int64? = nil
    ) -> TraceRecord {
      TraceRecord(
        run: "s", seq: seq, record: kind, timestamp: ms * 1_000_000, wallTime: 0, pid: 1, tid: 2,
        thread: "t", loop: 1, mode: "default", iteration: seq, depth: 1, activity: activity,
        calloutKind: callout, calloutName: callout.map { "\($0)-1" },
        duration: duration.map { $0 * 1_000_000 },
        dueAt: lateMs.map { (ms - $0) * 1_000_000 }, lateness: lateMs.map { $0 * 1_000_000 })
    }
    let records = [
      record(1, .activity, at: 0, activity: "entry"),
      record(2, .callout, at: 0, callout: "block", duration: 10, lateMs: 2),
      record(3, .sleep, at: 10, duration: 30),
      record(4, .callout, at: 40, callout: "source", duration: 10, lateMs: 1),
      record(5, .activity, at: 50, activity: "exit"),
    ]
    let loop = TraceSummary(records: records).loops[0]
    #expect(loop.runNanoseconds == 50_000_000)
    #expect(loop.delays["block"]?.count == 1 && loop.delays["block"]?.p50 == 2_000_000)
    #expect(loop.delays["source"]?.p50 == 1_000_000)
    #expect(loop.delays.count == 2)
    let text = TraceSummary(records: records).text
    #expect(text.contains("utilization 40.0%"))
    #expect(text.contains("  delay block: p50 2.0 ms, p99 2.0 ms, max 2.0 ms (1 call-outs)"))
  }

  @Test func aPerformRequestsDelayRunsFromItsQueueingToItsCallout() throws {
    let metrics = LoopMetrics()
    let sink = CollectingSink()
    let tracer = LoopTracer(sinks: [sink], runID: "perform-delay")
    let snapshot = try onNewThread("perform-delay") { loop -> LoopMetricsSnapshot? in
      metrics.attach(to: loop)
      tracer.attach(to: loop)
      loop.perform(name: "first") {
        // Queued now, run after this call-out has spun for 20 ms.
        loop.perform(name: "second") {}
        burn(.milliseconds(20))
      }
      try loop.run(mode: .default, timeout: .milliseconds(60))
      metrics.detach()
      return metrics.snapshot(of: loop)
    }
    tracer.close()
    let blocks = try #require(snapshot?.delays["block"])
    #expect(blocks.count == 2)
    #expect(blocks.max >= 20_000_000)
    let second = try #require(sink.all.first { $0.calloutName == "second" })
    #expect((second.lateness ?? 0) >= 20_000_000)
    #expect(second.dueAt.map { $0 < second.timestamp } == true)
  }
}
