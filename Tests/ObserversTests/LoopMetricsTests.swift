import CoreMetrics
import Foundation
import MetricsTestKit
import RunLoopCore
import RunLoopObservers
import Testing

@Suite("Run-loop metrics")
struct LoopMetricsTests {
  @Test func snapshotCountsIterationsSleepCalloutsAndLatencies() throws {
    let exported = TestMetrics()
    let metrics = LoopMetrics(exportingTo: exported, labelPrefix: "test.runloop")
    let ticks = 5
    let signals = 5
    let (snapshot, loopID) = try onNewThread("metrics") { loop -> (LoopMetricsSnapshot?, UInt64) in
      let fired = GuardedState(0)
      let performed = GuardedState(0)
      let provider = TickProvider(interval: .milliseconds(4), count: ticks) {
        fired.withLock { $0 += 1 }
      }
      let source = CustomInputSource(name: "job") { performed.withLock { $0 += 1 } }
      try loop.add(source, mode: .default)
      loop.addDeadlineProvider(provider)
      metrics.attach(to: loop)
      // Another thread signals the source, waiting for each perform.
      let signaller = Thread {
        for round in 1...signals {
          source.signalAndWakeUp()
          _ = eventually { performed.withLock { $0 } >= round }
        }
      }
      signaller.start()
      let deadline = ContinuousClock.now + .seconds(10)
      while fired.withLock({ $0 }) < ticks || performed.withLock({ $0 }) < signals,
        ContinuousClock.now < deadline
      {
        try loop.run(mode: .default, timeout: .milliseconds(50))
      }
      metrics.detach()
      return (metrics.snapshot(of: loop), loop.id)
    }
    let measured = try #require(snapshot)
    #expect(measured.loopID == loopID)
    #expect(measured.runs >= 1)
    #expect(measured.iterations >= UInt64(ticks))
    #expect(measured.asleepNanoseconds > 0)
    #expect(measured.busyNanoseconds > 0)
    #expect(measured.asleepFraction > 0 && measured.asleepFraction < 1)
    #expect(measured.callouts["timer"]?.count == UInt64(ticks))
    #expect(measured.callouts["source"]?.count == UInt64(signals))
    #expect(measured.timerLateness.count == UInt64(ticks))
    #expect(measured.timerLateness.p50 <= measured.timerLateness.p99)
    #expect(measured.timerLateness.p99 <= measured.timerLateness.max)
    // Loosely: a timer on an idle loop fires within a second of its date.
    #expect(measured.timerLateness.max < 1_000_000_000)
    #expect(measured.signalToPerform.count == UInt64(signals))
    #expect(measured.signalToPerform.max > 0)

    let dimensions = [("loop", String(loopID))]
    let iterations = try exported.expectCounter("test.runloop.iterations", dimensions)
    #expect(UInt64(iterations.totalValue) == measured.iterations)
    let lateness = try exported.expectTimer("test.runloop.timer.lateness", dimensions)
    #expect(lateness.values.count == ticks)
    let latency = try exported.expectTimer("test.runloop.source.latency", dimensions)
    #expect(latency.values.count == signals)
    let timerCallouts = try exported.expectTimer(
      "test.runloop.callout.duration", dimensions + [("kind", "timer")])
    #expect(timerCallouts.values.count == ticks)
  }

  @Test func loopNeverSeenHasNoSnapshot() throws {
    let metrics = LoopMetrics()
    let loop = try onNewThread { loop in loop }
    #expect(metrics.snapshot(of: loop) == nil)
    #expect(metrics.snapshots().isEmpty)
  }
}
