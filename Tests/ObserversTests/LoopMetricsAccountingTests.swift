import CoreMetrics
import Foundation
import MetricsTestKit
import RunLoopCore
import RunLoopObservers
import RunLoopTestSupport
import Testing

@Suite("Loop metrics accounting", .serialized)
struct LoopMetricsAccountingTests {
  // Metrics attached while the loop is already running (a long-lived worker) time the run
  // from the first event they hear, so busy time covers the call-outs they saw.
  @Test func metricsAttachedDuringARunCountBusyTime() throws {
    let metrics = LoopMetrics()
    let snapshot = try onNewThread { loop -> LoopMetricsSnapshot? in
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      loop.perform {
        metrics.attach(to: loop)
        loop.perform(name: "busy") { usleep(30_000) }
      }
      try loop.run(mode: .default, timeout: .milliseconds(80))
      return metrics.snapshot(of: loop)
    }
    metrics.detach()
    let measured = try #require(snapshot)
    let calloutTime = measured.callouts.values.reduce(0) { $0 + $1.totalNanoseconds }
    #expect(calloutTime >= 25_000_000)
    #expect(measured.busyNanoseconds >= calloutTime)
  }

  // A call-out that runs the loop nested counts only its own time: the nested run's
  // call-outs and sleep are not counted a second time inside it.
  @Test func nestedCalloutsAndSleepsAreNotCountedTwice() throws {
    let metrics = LoopMetrics()
    let snapshot = try onNewThread { loop -> LoopMetricsSnapshot? in
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      metrics.attach(to: loop)
      loop.perform(name: "outer") {
        loop.perform(name: "inner") { usleep(30_000) }
        // The nested run performs "inner", then sleeps until its timeout.
        _ = try? loop.run(mode: .default, timeout: .milliseconds(200))
      }
      try loop.run(mode: .default, timeout: .zero)
      return metrics.snapshot(of: loop)
    }
    metrics.detach()
    let measured = try #require(snapshot)
    let blocks = try #require(measured.callouts["block"])
    #expect(blocks.count == 2)
    // "inner" took 30 ms; "outer" itself almost nothing. Counted inclusively, the nested
    // run's 200 ms would be in it too.
    #expect(blocks.totalNanoseconds >= 25_000_000)
    #expect(blocks.totalNanoseconds < 150_000_000)
    #expect(measured.asleepNanoseconds >= 100_000_000)
    #expect(measured.busyNanoseconds >= blocks.totalNanoseconds)
  }

  // The metrics factory is user code: it is called with no lock of the instrument held, so
  // it may read the instrument itself.
  @Test func metricsFactoryMayCallBackIntoTheInstrument() throws {
    let holder = GuardedState<LoopMetrics?>(nil)
    let factory = CallingBackFactory(holder: holder)
    let metrics = LoopMetrics(exportingTo: factory, labelPrefix: "callback")
    holder.withLock { $0 = metrics }
    let done = DispatchSemaphore(value: 0)
    let result = GuardedState<LoopMetricsSnapshot?>(nil)
    Thread {
      let snapshot = try? onNewThread("callback") { loop -> LoopMetricsSnapshot? in
        try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
        metrics.attach(to: loop)
        loop.perform(name: "work") {}
        try loop.run(mode: .default, timeout: .zero)
        return metrics.snapshot(of: loop)
      }
      result.withLock { $0 = snapshot ?? nil }
      done.signal()
    }.start()
    #expect(done.wait(timeout: .now() + 10) == .success, "the factory deadlocked the loop")
    metrics.detach()
    #expect(result.withLock { $0 }?.callouts["block"]?.count == 1)
    #expect(factory.callbacks.withLock { $0 } >= 2)
  }

  // The loop's thread exits: the live state goes, its last snapshot stays readable.
  @Test func snapshotOfAnExitedLoopStaysAvailable() throws {
    let metrics = LoopMetrics()
    metrics.attachToAllLoops()
    defer { metrics.detach() }
    let loopID = try onNewThread("exits") { loop -> UInt64 in
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      loop.perform(name: "once") {}
      try loop.run(mode: .default, timeout: .zero)
      return loop.id
    }
    let kept = try #require(metrics.snapshot(ofLoopID: loopID))
    #expect(kept.callouts["block"]?.count == 1)
    #expect(kept.runs == 1)
  }

  // Threads come and go: only the last snapshots of the most recently exited loops are
  // kept, so a process that makes many short-lived threads does not grow without bound.
  @Test func metricsKeepABoundedNumberOfExitedLoops() throws {
    let metrics = LoopMetrics()
    let count = LoopMetrics.retainedExitedLoops + 6
    var ids: [UInt64] = []
    for index in 0..<count {
      ids.append(
        try onNewThread("short-\(index)") { loop -> UInt64 in
          try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
          metrics.attach(to: loop)
          try loop.run(mode: .default, timeout: .zero)
          return loop.id
        })
    }
    #expect(eventually(2) { metrics.snapshots().count == LoopMetrics.retainedExitedLoops })
    #expect(metrics.snapshot(ofLoopID: ids[0]) == nil)
    #expect(metrics.snapshot(ofLoopID: ids[count - 1])?.runs == 1)
  }
}

/// A swift-metrics factory whose makers read the LoopMetrics that uses it (as a factory
/// backed by an exporter that reports the loop's own numbers might).
final class CallingBackFactory: MetricsFactory, Sendable {
  let holder: GuardedState<LoopMetrics?>
  let callbacks = GuardedState(0)
  private let inner = TestMetrics()

  init(holder: GuardedState<LoopMetrics?>) {
    self.holder = holder
  }

  private func callBack() {
    _ = holder.withLock { $0 }?.snapshots()
    callbacks.withLock { $0 += 1 }
  }

  func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
    callBack()
    return inner.makeCounter(label: label, dimensions: dimensions)
  }

  func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool)
    -> any RecorderHandler
  {
    callBack()
    return inner.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
  }

  func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
    callBack()
    return inner.makeTimer(label: label, dimensions: dimensions)
  }

  func destroyCounter(_ handler: any CounterHandler) { inner.destroyCounter(handler) }
  func destroyRecorder(_ handler: any RecorderHandler) { inner.destroyRecorder(handler) }
  func destroyTimer(_ handler: any TimerHandler) { inner.destroyTimer(handler) }
}
