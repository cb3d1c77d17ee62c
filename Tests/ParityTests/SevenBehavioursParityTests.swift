import Foundation
import Testing

/// The seven behaviours of issue 13, each run on CFRunLoop and on ours; the traces must be
/// equal entry for entry. Scenarios that depend on time compare shapes (which grid points a
/// timer hit, whether a sleep ended at once), never times.
@Suite("Parity: the seven behaviours")
struct SevenBehavioursParityTests {
  /// Whether a trace entry is something other than the activities of a pass (2, 3, 6, 8).
  static func isNotAPassActivity(_ entry: String) -> Bool {
    !entry.hasPrefix("before") && !entry.hasPrefix("after")
  }

  // 1. Wake-ups with nothing to wake.

  @Test func wakeUpWhileNoRunIsActiveIsDropped() {
    let traces = Parity.run { loop in
      loop.add(loop.timer("t", after: 0.05, every: nil) { _ in }, mode: "default")
      loop.wakeUp()
      loop.run(5)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer:t",
        "exit", "result:finished",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func wakeUpBetweenWakingAndTheNextPassIsDropped() {
    let traces = Parity.run { loop in
      let once = Shared(true)
      loop.add(loop.source("keep"), mode: "default")
      loop.add(loop.timer("t", after: 0.03, every: nil) { _ in }, mode: "default")
      let waker = loop.observer(
        "w", activities: [.afterWaiting], repeats: true, order: 0
      ) { _, _ in
        if once.first() { loop.wakeUp() }
      }
      loop.add(waker, mode: "default")
      loop.run(0.3)
    }
    // The wake-up from the afterWaiting observer is dropped: the second sleep lasts until
    // the timeout (one more pass, not two).
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "observer:w",
        "timer:t", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
        "observer:w", "exit", "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func wakeUpFromATimerCalloutIsDropped() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      loop.add(loop.timer("t", after: 0.03, every: nil) { _ in loop.wakeUp() }, mode: "default")
      loop.run(0.3)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer:t",
        "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func wakeUpDuringAPassEndsTheNextSleep() {
    let traces = Parity.run { loop in
      let once = Shared(true)
      loop.add(loop.source("keep"), mode: "default")
      let waker = loop.observer(
        "w", activities: [.entry, .beforeSources], repeats: true, order: 0
      ) { _, activity in
        if activity == .beforeSources, once.first() {
          loop.wakeUp()
        }
      }
      loop.add(waker, mode: "default")
      loop.run(0.2)
    }
    #expect(
      traces.cf == [
        "entry", "observer:w", "beforeTimers", "beforeSources", "observer:w", "beforeWaiting",
        "afterWaiting", "beforeTimers", "beforeSources", "observer:w", "beforeWaiting",
        "afterWaiting", "exit", "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func wakeUpFromTheEntryObserverEndsTheFirstSleep() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      let waker = loop.observer("w", activities: [.entry], repeats: true, order: 0) { _, _ in
        loop.wakeUp()
      }
      loop.add(waker, mode: "default")
      loop.run(0.2)
    }
    #expect(
      traces.cf == [
        "entry", "observer:w", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
        "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func wakeUpPendingWhenARunEndsEndsTheNextRunsFirstSleepOnly() {
    let traces = Parity.run { loop in
      let once = Shared(true)
      loop.add(loop.source("keep"), mode: "default")
      let waker = loop.observer("w", activities: [.entry], repeats: true, order: 0) { _, _ in
        if once.first() {
          loop.wakeUp()  // during a run: its event stays pending when the run ends at once
          loop.stop()
        }
      }
      loop.add(waker, mode: "default")
      loop.run(5)
      loop.run(0.03)
      loop.wakeUp()  // no run active: dropped
      loop.run(0.03)
    }
    let pass = ["beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting"]
    #expect(
      traces.cf == ["entry", "observer:w", "exit", "result:stopped"]
        + ["entry", "observer:w"] + pass + pass + ["exit", "result:timedOut"]
        + ["entry", "observer:w"] + pass + ["exit", "result:timedOut"])
    #expect(traces.ours == traces.cf)
  }

  @Test func signalQueuedAfterThePassLookedEndsTheNextSleep() {
    let traces = Parity.run { loop in
      let once = Shared(true)
      let source = loop.source("s")
      loop.add(source, mode: "default")
      let waker = loop.observer("w", activities: [.beforeWaiting], repeats: true, order: 0) {
        _, _ in
        if once.first() {
          loop.signal(source)
          loop.wakeUp()
        }
      }
      loop.add(waker, mode: "default")
      loop.run(0.2)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "observer:w", "afterWaiting",
        "beforeTimers", "beforeSources", "source:s", "beforeTimers", "beforeSources",
        "beforeWaiting", "observer:w", "afterWaiting", "exit", "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  // 2. Stop before the first pass.

  @Test func stopFromTheEntryObserverEndsTheRunAtOnce() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      let stopper = loop.observer("stopper", activities: [.entry], repeats: true, order: 0) {
        _, _ in loop.stop()
      }
      loop.add(stopper, mode: "default")
      loop.run(5)
    }
    #expect(traces.cf == ["entry", "observer:stopper", "exit", "result:stopped"])
    #expect(traces.ours == traces.cf)
  }

  @Test func stopDuringAPassEndsTheRunAfterItsSleep() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      let stopper = loop.observer(
        "stopper", activities: [.beforeSources], repeats: true, order: 0
      ) { _, _ in loop.stop() }
      loop.add(stopper, mode: "default")
      loop.run(5)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "observer:stopper", "beforeWaiting",
        "afterWaiting", "exit", "result:stopped",
      ])
    #expect(traces.ours == traces.cf)
  }

  // 3. A repeating timer whose own call-out overruns.

  @Test func overrunningCalloutIsFollowedByTheNextGridPoint() {
    let traces = Parity.run { loop in
      let interval = 0.04
      let start = loop.now()
      let first = start + interval
      let fires = Shared(0)
      let returned = Shared(0.0)
      let timer = loop.timer("t", after: interval, every: interval) { handle in
        let count = fires.increment()
        if count == 1 {
          usleep(100_000)  // overruns two and a half periods
          returned.value = loop.now()
        } else {
          // The first grid point later than the moment the overrunning call-out returned.
          let periods = ((returned.value - first) / interval).rounded(.down) + 1
          let nextGridPoint = first + periods * interval
          loop.mark(loop.now() >= nextGridPoint - 0.002 ? "next grid point" : "catch-up fire")
          loop.invalidate(handle)
        }
      }
      loop.add(timer, mode: "default")
      loop.run(5)
    }
    // Shapes only: how many passes it takes depends on when each loop happened to wake.
    let cf = traces.cf.filter(Self.isNotAPassActivity)
    #expect(cf == ["entry", "timer:t", "timer:t", "next grid point", "exit", "result:finished"])
    #expect(traces.ours.filter(Self.isNotAPassActivity) == cf)
  }

  @Test func timerDelayedByOtherWorkFiresOnceLateThenReturnsToItsGrid() {
    let traces = Parity.run { loop in
      let interval = 0.04
      let start = loop.now()
      let fires = Shared(0)
      let blocker = loop.timer("blocker", after: 0.03, every: nil) { _ in
        usleep(100_000)  // until 0.13: the grid points 0.04, 0.08 and 0.12 pass meanwhile
      }
      let timer = loop.timer("t", after: interval, every: interval) { handle in
        let count = fires.increment()
        let period = ((loop.now() - start) / interval).rounded(.down)
        if count == 1 {
          loop.mark(period >= 3 ? "late" : "on time")
        } else {
          loop.mark(period >= 4 ? "back on the grid" : "catch-up fire")
          loop.invalidate(handle)
        }
      }
      loop.add(blocker, mode: "default")
      loop.add(timer, mode: "default")
      loop.run(5)
    }
    // Shapes only: whether the two timers share a wake-up depends on when each loop woke.
    let cf = traces.cf.filter(Self.isNotAPassActivity)
    #expect(
      cf == [
        "entry", "timer:blocker", "timer:t", "late", "timer:t", "back on the grid", "exit",
        "result:finished",
      ])
    #expect(traces.ours.filter(Self.isNotAPassActivity) == cf)
  }

  // 4. A repeating timer and a nested run from its own call-out.

  @Test func nestedRunFromATimersCalloutDoesNotFireThatTimer() {
    let traces = Parity.run { loop in
      let fires = Shared(0)
      let timer = loop.timer("t", after: 0.01, every: 0.01) { handle in
        let count = fires.increment()
        if count == 1 {
          loop.run(0.06)
        } else {
          loop.invalidate(handle)
        }
      }
      loop.add(timer, mode: "default")
      loop.run(5)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer:t",
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:timedOut", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
        "timer:t", "exit", "result:finished",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func firingOneShotTimerKeepsItsModeFromBeingEmptyInANestedRun() {
    let traces = Parity.run { loop in
      let timer = loop.timer("t", after: 0.01, every: nil) { handle in
        loop.mark("valid inside: \(loop.isValid(handle))")
        loop.run(0.03)
      }
      loop.add(timer, mode: "default")
      loop.run(5)
      loop.mark("valid after: \(loop.isValid(timer))")
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer:t",
        "valid inside: true", "entry", "beforeTimers", "beforeSources", "beforeWaiting",
        "afterWaiting", "exit", "result:timedOut", "exit", "result:finished",
        "valid after: false",
      ])
    #expect(traces.ours == traces.cf)
  }

  // 5. One-shot observers during their call-out.

  @Test func oneShotObserverIsValidAndScheduledDuringItsCallout() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      let once = loop.observer("once", activities: [.entry], repeats: false, order: 0) {
        handle, _ in
        loop.mark(
          "inside: valid \(loop.isValid(handle)), in mode \(loop.contains(handle, mode: "default"))"
        )
      }
      loop.add(once, mode: "default")
      loop.run(0)
      loop.run(0)
      loop.mark(
        "after: valid \(loop.isValid(once)), in mode \(loop.contains(once, mode: "default"))")
    }
    #expect(
      traces.cf == [
        "entry", "observer:once", "inside: valid true, in mode true", "beforeTimers",
        "beforeSources", "exit", "result:timedOut", "entry", "beforeTimers", "beforeSources",
        "exit", "result:timedOut", "after: valid false, in mode false",
      ])
    #expect(traces.ours == traces.cf)
  }

  // 6. An observer removed by another observer during a notification.

  @Test func observerRemovedDuringANotificationIsStillCalledButAnInvalidatedOneIsNot() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      let removed = loop.observer("removed", [.entry], order: 2)
      let invalidated = loop.observer("invalidated", [.entry], order: 3)
      let first = loop.observer("first", activities: [.entry], repeats: true, order: 1) { _, _ in
        loop.remove(removed, mode: "default")
        loop.invalidate(invalidated)
      }
      loop.add(first, mode: "default")
      loop.add(removed, mode: "default")
      loop.add(invalidated, mode: "default")
      loop.run(0)
      loop.run(0)
    }
    #expect(
      traces.cf == [
        "entry", "observer:first", "observer:removed", "beforeTimers", "beforeSources", "exit",
        "result:timedOut", "entry", "observer:first", "beforeTimers", "beforeSources", "exit",
        "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  // 7. Custom sources of equal order.

  @Test func sourcesOfEqualOrderRunInTheOrderTheyWereFirstSignalled() {
    let traces = Parity.run { loop in
      let sources = (0..<6).map { loop.source("s\($0)") }
      for source in sources { loop.add(source, mode: "default") }
      for index in [3, 0, 5, 1, 4, 2] { loop.signal(sources[index]) }
      loop.run(0)
      // A second signal before the source ran keeps its place.
      for index in [3, 0, 5, 3] { loop.signal(sources[index]) }
      loop.run(0)
      // With "return after source handled", the first signalled of the lowest order runs.
      for index in [2, 1] { loop.signal(sources[index]) }
      loop.run(0, returnAfterSourceHandled: true)
      loop.run(0, returnAfterSourceHandled: true)
    }
    #expect(
      traces.cf.filter { $0.hasPrefix("source:") || $0.hasPrefix("result:") } == [
        "source:s3", "source:s0", "source:s5", "source:s1", "source:s4", "source:s2",
        "result:timedOut", "source:s3", "source:s0", "source:s5", "result:timedOut",
        "source:s2", "result:handledSource", "source:s1", "result:handledSource",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func lowerOrderStillRunsFirstWhateverTheSignalOrder() {
    let traces = Parity.run { loop in
      let late = loop.source("late", order: 5)
      let early = loop.source("early", order: 1)
      loop.add(late, mode: "default")
      loop.add(early, mode: "default")
      loop.signal(late)
      loop.signal(early)
      loop.run(0)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "source:early", "source:late", "exit",
        "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  // Found while probing: the sources a pass performs are those signalled when step 4 began.

  @Test func sourceSignalledDuringStepFourWaitsForTheNextPass() {
    let traces = Parity.run { loop in
      let later = loop.source("later", order: 2)
      let earlier = loop.source("earlier", order: 0)
      let first = loop.source("first", order: 1) {
        loop.signal(later)
        loop.signal(earlier)
      }
      for source in [first, later, earlier] { loop.add(source, mode: "default") }
      loop.signal(first)
      loop.run(0.05)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "source:first", "beforeTimers",
        "beforeSources", "source:earlier", "source:later", "beforeTimers", "beforeSources",
        "beforeWaiting", "afterWaiting", "exit", "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }
}
