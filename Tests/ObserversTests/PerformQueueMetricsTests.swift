import CoreMetrics
import Dispatch
import Foundation
import MetricsTestKit
import RunLoopCore
import RunLoopObservers
import RunLoopTestSupport
import Synchronization
import Testing

@Suite("Perform queue depth in metrics")
struct PerformQueueMetricsTests {
  // Threads flood a loop held in a call-out, with a limit of 500: the snapshot and the
  // exported gauge show the queue at its limit, never past it, and every request ran.
  @Test func snapshotsAndTheGaugeShowTheQueueDepthUpToItsLimit() throws {
    let exported = TestMetrics()
    let metrics = LoopMetrics(exportingTo: exported, labelPrefix: "test.runloop")
    let gate = DispatchSemaphore(value: 0)
    let ran = Atomic<Int>(0)
    let thread = try startLoopThread(name: "metrics-flood") { loop in
      loop.performQueueLimit = 500
      metrics.attach(to: loop)
    }
    defer { stopLoopThread(thread) }
    let loop = thread.runLoop
    let entered = DispatchSemaphore(value: 0)
    loop.perform {
      entered.signal()
      gate.wait()
    }
    entered.wait()
    let producers = DispatchGroup()
    for _ in 0..<4 {
      producers.enter()
      DispatchQueue.global().async {
        for _ in 0..<1_000 { loop.perform { ran.add(1, ordering: .relaxed) } }
        producers.leave()
      }
    }
    #expect(eventually(10) { loop.queuedPerformRequests == 500 })
    gate.signal()
    #expect(producers.wait(timeout: .now() + 30) == .success)
    #expect(eventually(30) { ran.load(ordering: .relaxed) == 4_000 })
    // Before it sleeps again, the loop records the drained queue.
    #expect(eventually(10) { metrics.snapshot(of: loop)?.performQueueDepth == 0 })
    let snapshot = try #require(metrics.snapshot(of: loop))
    #expect(snapshot.performQueueMax == 500)
    let gauge = try exported.expectGauge(
      "test.runloop.perform.queue.depth", [("loop", String(loop.id))])
    #expect(gauge.values.max() == 500)
    #expect(gauge.values.allSatisfy { $0 <= 500 })
  }
}
