import Foundation
import Testing

/// The facts the guide leaves open and CFRunLoop decides (DESIGN.md, "Reference behaviour"),
/// run on both sides.
@Suite("Parity: facts of the sequence of events")
struct SequenceFactsParityTests {
  @Test func emptyModeReturnsFinishedBeforeAnyActivity() {
    let traces = Parity.run { loop in
      loop.add(loop.observer("o"), mode: "default")  // observers do not keep a run alive
      loop.run(5)
    }
    #expect(traces.cf == ["result:finished"])
    #expect(traces.ours == traces.cf)
  }

  @Test func zeroTimeoutMakesOnePassWithoutWaiting() {
    let traces = Parity.run { loop in
      let source = loop.source("s")
      loop.add(source, mode: "default")
      loop.run(0)
      loop.signal(source)
      loop.run(-3)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "exit", "result:timedOut", "entry",
        "beforeTimers", "beforeSources", "source:s", "exit", "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func returnAfterSourceHandledRunsOnlyTheLowestOrderSource() {
    let traces = Parity.run { loop in
      let five = loop.source("five", order: 5)
      let one = loop.source("one", order: 1)
      loop.add(five, mode: "default")
      loop.add(one, mode: "default")
      loop.signal(five)
      loop.signal(one)
      loop.perform(mode: "default", name: "b") {}
      loop.run(1, returnAfterSourceHandled: true)
      loop.run(1, returnAfterSourceHandled: true)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "block:b", "source:one", "exit",
        "result:handledSource", "entry", "beforeTimers", "beforeSources", "source:five", "exit",
        "result:handledSource",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func timersAndBlocksNeverCountAsAHandledSource() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      loop.add(loop.timer("t", after: 0.01, every: nil) { _ in }, mode: "default")
      loop.perform(mode: "default", name: "b") {}
      loop.run(0.1, returnAfterSourceHandled: true)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "block:b", "beforeWaiting", "afterWaiting",
        "timer:t", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func stopOnALoopThatIsNotRunningIsForgotten() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      loop.stop()
      loop.run(0.03)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func oneShotObserverIsCalledOnce() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      loop.add(loop.observer("once", [.beforeSources], repeats: false), mode: "default")
      loop.run(0)
      loop.run(0)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "observer:once", "exit", "result:timedOut",
        "entry", "beforeTimers", "beforeSources", "exit", "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func observersRunInAscendingOrderTiesInTheOrderTheyWereAdded() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      for (name, order) in [("c", 3), ("a1", 1), ("b", 2), ("a2", 1), ("z", -1)] {
        loop.add(loop.observer(name, [.entry], order: order), mode: "default")
      }
      loop.run(0)
    }
    #expect(
      traces.cf.prefix(6) == [
        "entry", "observer:z", "observer:a1", "observer:a2", "observer:b", "observer:c",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func observerAddedDuringANotificationIsFirstCalledForTheNextOne() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      let late = loop.observer("late", [.entry, .beforeTimers], order: 5)
      let adder = loop.observer("adder", activities: [.entry], repeats: false, order: 1) { _, _ in
        loop.add(late, mode: "default")
      }
      loop.add(adder, mode: "default")
      loop.run(0)
    }
    #expect(
      traces.cf == [
        "entry", "observer:adder", "beforeTimers", "observer:late", "beforeSources", "exit",
        "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func observerIsNotCalledAgainByANestedRunFromItsOwnCallout() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      let depth = Shared(0)
      let nester = loop.observer("nester", activities: [.beforeSources], repeats: true, order: 0) {
        _, _ in
        guard depth.increment() == 1 else { return }
        loop.run(0)
      }
      loop.add(nester, mode: "default")
      loop.add(loop.observer("other", [.beforeSources], order: 1), mode: "default")
      loop.run(0)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "observer:nester", "entry", "beforeTimers",
        "beforeSources", "observer:other", "exit", "result:timedOut", "observer:other", "exit",
        "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func nestedRunInAnotherModeRunsOnlyThatModesItems() {
    let traces = Parity.run { loop in
      let inner = loop.source("inner")
      loop.add(inner, mode: "private")
      let outer = loop.source("outer") {
        loop.signal(inner)
        loop.run(mode: "private", seconds: 1, returnAfterSourceHandled: true)
      }
      loop.add(outer, mode: "default")
      loop.signal(outer)
      loop.run(0)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "source:outer", "entry", "beforeTimers",
        "beforeSources", "source:inner", "exit", "result:handledSource", "exit",
        "result:timedOut",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func commonModeItemsJoinModesAddedToTheCommonModesLater() {
    let traces = Parity.run { loop in
      let source = loop.source("s")
      loop.add(source, mode: "common")
      loop.add(loop.observer("o", [.entry]), mode: "common")
      loop.run(mode: "tracking", seconds: 0, returnAfterSourceHandled: false)  // empty there
      loop.addCommonMode("tracking")
      loop.signal(source)
      loop.run(mode: "tracking", seconds: 0, returnAfterSourceHandled: false)
      loop.mark("in tracking: \(loop.contains(source, mode: "tracking"))")
    }
    #expect(
      traces.cf == [
        "result:finished", "entry", "observer:o", "beforeTimers", "beforeSources", "source:s",
        "exit", "result:timedOut", "in tracking: true",
      ])
    #expect(traces.ours == traces.cf)
  }

  @Test func timerInTheCommonModesFiresInACommonModeAddedEarlier() {
    let traces = Parity.run { loop in
      loop.addCommonMode("tracking")
      let fires = Shared(0)
      let timer = loop.timer("t", after: 0.01, every: 0.01) { handle in
        if fires.increment() == 3 { loop.invalidate(handle) }
      }
      loop.add(timer, mode: "common")
      loop.run(mode: "tracking", seconds: 5, returnAfterSourceHandled: false)
    }
    let pass = ["beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer:t"]
    #expect(traces.cf == ["entry"] + pass + pass + pass + ["exit", "result:finished"])
    #expect(traces.ours == traces.cf)
  }
}
