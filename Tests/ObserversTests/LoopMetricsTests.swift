import CoreMetrics
import Foundation
import MetricsTestKit
import RunLoopCore
import RunLoopObservers
import RunLoopTestSupport
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
      loop.addDeadlineSource(provider)
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

  @Test(.enabled(if: ProcessInfo.processInfo.activeProcessorCount >= 2, "needs two CPUs"))
  func snapshotAndCountersFollowTheLoopsPollingBeforeSleep() throws {
    let exported = TestMetrics()
    let metrics = LoopMetrics(exportingTo: exported, labelPrefix: "test.runloop")
    let pair = try PingPongPair()
    defer { pair.stop() }
    for loop in pair.loops {
      metrics.attach(to: loop)
      loop.spinLimit = .milliseconds(1)
    }
    pair.bounceHeldBursts { pair.loops.contains { $0.spinStatistics.caught > 0 } }
    // A sleep is reported when it ends: wake both loops now and then (each sleep in between
    // is long, so it does not poll) until the snapshots have caught up with the loops.
    let caughtUp = eventually {
      for loop in pair.loops { loop.perform {} }
      usleep(5_000)
      return pair.loops.allSatisfy { metrics.snapshot(of: $0)?.spins == $0.spinStatistics }
    }
    #expect(caughtUp)
    var caught: UInt64 = 0
    for loop in pair.loops {
      let spins = try #require(metrics.snapshot(of: loop)).spins
      caught += spins.caught
      let dimensions = [("loop", String(loop.id))]
      // The counters add up to the loop's own totals, polls made before the metrics were
      // attached included, so they hold every poll the snapshot counts. A counter is raised
      // just after the snapshot is updated, outside the metrics' lock (the metrics factory
      // may call back in), so it may trail the snapshot for a moment.
      if spins.spins > 0 {
        let polls = try exported.expectCounter("test.runloop.spins", dimensions)
        #expect(eventually { UInt64(polls.totalValue) == spins.spins })
        #expect(UInt64(polls.totalValue) == spins.spins)
      }
      if spins.caught > 0 {
        let catches = try exported.expectCounter("test.runloop.spins.caught", dimensions)
        #expect(eventually { UInt64(catches.totalValue) == spins.caught })
        #expect(UInt64(catches.totalValue) == spins.caught)
      }
    }
    #expect(caught > 0)
  }

  @Test func loopNeverSeenHasNoSnapshot() throws {
    let metrics = LoopMetrics()
    let loop = try onNewThread { loop in loop }
    #expect(metrics.snapshot(of: loop) == nil)
    #expect(metrics.snapshots().isEmpty)
  }
}
