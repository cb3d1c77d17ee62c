import Foundation
import Testing

/// A wake-up made during a pass that handled a source: the pass does not block, and its
/// non-blocking look for events takes the wake-up, so the next pass sleeps (no extra empty
/// pass). CFRunLoop's `poll` of `__CFRunLoopRun` does this; so does ours.
@Suite("Parity: a wake-up taken by a pass that handled a source")
struct WakeUpConsumedParityTests {
  /// Activities of a pass that handled a source, then of one that slept until the timeout.
  static let handledThenSlept = [
    "entry", "beforeTimers", "beforeSources", "source:s", "beforeTimers", "beforeSources",
    "beforeWaiting", "afterWaiting", "exit", "result:timedOut",
  ]

  @Test func wakeUpFromTheSourcesOwnCalloutDoesNotMakeAnEmptyPass() {
    let traces = Parity.run { loop in
      let source = loop.source("s") { loop.wakeUp() }
      loop.add(source, mode: "default")
      loop.signal(source)
      loop.run(0.2)
    }
    #expect(traces.cf == Self.handledThenSlept)
    #expect(traces.ours == traces.cf)
  }

  @Test func wakeUpFromAnotherThreadDuringTheCalloutDoesNotMakeAnEmptyPass() {
    let traces = Parity.run { loop in
      let woken = DispatchSemaphore(value: 0)
      let source = loop.source("s") {
        Thread {
          loop.wakeUp()
          woken.signal()
        }.start()
        woken.wait()
      }
      loop.add(source, mode: "default")
      loop.signal(source)
      loop.run(0.2)
    }
    #expect(traces.cf == Self.handledThenSlept)
    #expect(traces.ours == traces.cf)
  }

  /// What the wake-up announced is not lost: a perform request queued with it runs in the
  /// same pass (step 9), a signalled source in the next pass (step 4).
  @Test func whatTheTakenWakeUpAnnouncedStillRuns() {
    let traces = Parity.run { loop in
      let other = loop.source("other")
      loop.add(other, mode: "default")
      let source = loop.source("s") {
        loop.signal(other)
        loop.wakeUp()
      }
      loop.add(source, mode: "default")
      loop.signal(source)
      loop.run(0.2)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "source:s", "beforeTimers", "beforeSources",
        "source:other", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }
}
