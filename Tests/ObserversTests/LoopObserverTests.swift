import RunLoopCore
import RunLoopObservers
import RunLoopTestSupport
import Testing

@Suite("Run-loop observers")
struct LoopObserverTests {
  @Test func observersRunInAscendingOrderWithTiesInInsertionOrder() throws {
    let calls = try onNewThread { loop -> [String] in
      let log = Log()
      let source = CustomInputSource(name: "keep-alive") {}
      try loop.add(source, mode: .default)
      let late = LoopObserver(activities: .entry, order: 5) { _, _ in log.append("5") }
      let firstOne = LoopObserver(activities: .entry, order: 1) { _, _ in log.append("1a") }
      let secondOne = LoopObserver(activities: .entry, order: 1) { _, _ in log.append("1b") }
      let early = LoopObserver(activities: .entry, order: -3) { _, _ in log.append("-3") }
      for observer in [late, secondOne, early, firstOne] { loop.add(observer, mode: .default) }
      try loop.run(mode: .default, timeout: .zero)
      return log.all
    }
    // "1b" was created after "1a" but added before it: ties follow insertion.
    #expect(calls == ["-3", "1b", "1a", "5"])
  }

  @Test func oneShotObserverIsCalledOnceThenInvalid() throws {
    let (calls, valid, contained) = try onNewThread { loop -> (Int, Bool, Bool) in
      let count = GuardedState(0)
      let source = CustomInputSource(name: "s") {}
      try loop.add(source, mode: .default)
      let observer = LoopObserver(activities: .beforeTimers, repeats: false) { _, _ in
        count.withLock { $0 += 1 }
      }
      loop.add(observer, mode: .default)
      source.signal()
      // Two passes: one performs the source, one sleeps until the timeout.
      try loop.run(mode: .default, timeout: .milliseconds(20))
      try loop.run(mode: .default, timeout: .zero)
      return (count.withLock { $0 }, observer.isValid, loop.contains(observer, mode: .default))
    }
    #expect(calls == 1)
    #expect(!valid)
    #expect(!contained)
  }

  @Test func repeatingObserverSeesTheWholeSequenceOfEvents() throws {
    let calls = try onNewThread { loop -> [String] in
      let log = Log()
      let source = CustomInputSource(name: "s") {}
      try loop.add(source, mode: .default)
      let observer = LoopObserver(activities: .allActivities) { _, activity in
        log.append(activity.name)
      }
      loop.add(observer, mode: .default)
      try loop.run(mode: .default, timeout: .milliseconds(10))
      return log.all
    }
    #expect(
      calls == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
      ])
  }

  @Test func observersHearOnlyRunsInTheirModesIncludingCommonModesAddedLater() throws {
    let calls = try onNewThread { loop -> [String] in
      let log = Log()
      let custom: LoopMode = "custom"
      let later: LoopMode = "later"
      let source = CustomInputSource(name: "everywhere") {}
      for mode in [LoopMode.default, custom, later] { try loop.add(source, mode: mode) }
      let inCustom = LoopObserver(activities: .entry) { _, _ in log.append("custom-observer") }
      let inCommon = LoopObserver(activities: .entry) { _, _ in log.append("common-observer") }
      loop.add(inCustom, mode: custom)
      loop.add(inCommon, mode: .common)
      log.append("run default")
      try loop.run(mode: .default, timeout: .zero)
      log.append("run later")
      try loop.run(mode: later, timeout: .zero)
      loop.addCommonMode(later)
      log.append("run later (now common)")
      try loop.run(mode: later, timeout: .zero)
      log.append("run custom")
      try loop.run(mode: custom, timeout: .zero)
      return log.all
    }
    #expect(
      calls == [
        "run default", "common-observer", "run later", "run later (now common)",
        "common-observer", "run custom", "custom-observer",
      ])
  }

  @Test func observerIsNotReenteredByANestedRunFromItsOwnCallout() throws {
    let calls = try onNewThread { loop -> [String] in
      let log = Log()
      let source = CustomInputSource(name: "s") {}
      try loop.add(source, mode: .default)
      let nested = GuardedState(false)
      let outer = LoopObserver(activities: .allActivities, order: 0) { _, activity in
        let depth = loop.currentMode == nil ? 0 : 1
        log.append("outer \(activity.name) \(depth)")
        guard activity == .beforeSources, !nested.withLock({ $0 }) else { return }
        nested.withLock { $0 = true }
        log.append("nested run begins")
        _ = try? loop.run(mode: .default, timeout: .zero)
        log.append("nested run ends")
      }
      let witness = LoopObserver(activities: .allActivities, order: 1) { _, activity in
        log.append("witness \(activity.name)")
      }
      loop.add(outer, mode: .default)
      loop.add(witness, mode: .default)
      try loop.run(mode: .default, timeout: .zero)
      return log.all
    }
    #expect(
      calls == [
        "outer entry 1", "witness entry", "outer beforeTimers 1", "witness beforeTimers",
        "outer beforeSources 1", "nested run begins",
        // The nested run tells the witness but skips the observer whose call-out is running.
        "witness entry", "witness beforeTimers", "witness beforeSources", "witness exit",
        "nested run ends", "witness beforeSources", "outer exit 1", "witness exit",
      ])
  }

  @Test func oneShotObserverIsValidAndScheduledDuringItsCallout() throws {
    let inside = try onNewThread { loop -> [Bool] in
      let seen = GuardedState<[Bool]>([])
      try loop.add(CustomInputSource(name: "s") {}, mode: .default)
      let observer = LoopObserver(activities: .entry, repeats: false) { observer, _ in
        seen.withLock { $0 = [observer.isValid, loop.contains(observer, mode: .default)] }
      }
      loop.add(observer, mode: .default)
      try loop.run(mode: .default, timeout: .zero)
      return seen.withLock { $0 } + [observer.isValid, loop.contains(observer, mode: .default)]
    }
    // Valid and in its mode inside its call-out, as in CoreFoundation; neither after it.
    #expect(inside == [true, true, false, false])
  }

  @Test func observerRemovedDuringANotificationIsStillCalledThatOnce() throws {
    let calls = try onNewThread { loop -> [String] in
      let log = Log()
      try loop.add(CustomInputSource(name: "s") {}, mode: .default)
      let removed = LoopObserver(activities: .entry, order: 2) { observer, _ in
        log.append("removed (valid: \(observer.isValid))")
      }
      let invalidated = LoopObserver(activities: .entry, order: 3) { _, _ in
        log.append("invalidated")
      }
      let first = LoopObserver(activities: .entry, order: 1) { _, _ in
        log.append("first")
        loop.remove(removed, mode: .default)
        invalidated.invalidate()
      }
      for observer in [first, removed, invalidated] { loop.add(observer, mode: .default) }
      try loop.run(mode: .default, timeout: .zero)
      log.append("second run")
      try loop.run(mode: .default, timeout: .zero)
      return log.all
    }
    // CoreFoundation calls every still-valid observer of the notification's snapshot: the
    // one only removed from the mode is called this once; the invalidated one is not.
    #expect(calls == ["first", "removed (valid: true)", "second run", "first"])
  }

  @Test func observersAddedOrRemovedDuringANotificationTakeEffectSafely() throws {
    let calls = try onNewThread { loop -> [String] in
      let log = Log()
      let source = CustomInputSource(name: "s") {}
      try loop.add(source, mode: .default)
      let added = LoopObserver(activities: [.beforeTimers, .beforeSources], order: 9) {
        _, activity in log.append("added \(activity.name)")
      }
      let victim = LoopObserver(activities: .beforeTimers, order: 5) { _, _ in
        log.append("victim")
      }
      let adder = LoopObserver(activities: .beforeTimers, order: 0) { observer, _ in
        log.append("adder")
        loop.add(added, mode: .default)
        loop.remove(victim, mode: .default)
        observer.invalidate()
      }
      loop.add(adder, mode: .default)
      loop.add(victim, mode: .default)
      try loop.run(mode: .default, timeout: .zero)
      return log.all
    }
    // The removed observer is still called for this notification (it is in its snapshot
    // and still valid); the added one hears from the next notification; invalidating
    // oneself inside the call-out is safe.
    #expect(calls == ["adder", "victim", "added beforeSources"])
  }

  @Test func invalidateRemovesTheObserverFromEveryLoopAndMode() throws {
    let (calls, valid) = try onNewThread { loop -> ([String], Bool) in
      let log = Log()
      let source = CustomInputSource(name: "s") {}
      try loop.add(source, mode: .default)
      let observer = LoopObserver(activities: .entry) { _, _ in log.append("entry") }
      loop.add(observer, mode: .default)
      loop.add(observer, mode: .common)
      try loop.run(mode: .default, timeout: .zero)
      observer.invalidate()
      try loop.run(mode: .default, timeout: .zero)
      loop.add(observer, mode: .default)  // adding an invalid observer does nothing
      try loop.run(mode: .default, timeout: .zero)
      return (log.all, observer.isValid)
    }
    #expect(calls == ["entry"])
    #expect(!valid)
  }

  @Test func observerAddedFromAnotherThreadHearsTheRunningLoop() throws {
    let heard = GuardedState(0)
    let ready = GuardedState<EventRunLoop?>(nil)
    let thread = RunLoopThread(name: "observed") { thread in
      let loop = thread.runLoop
      try loop.add(CustomInputSource(name: "keep-alive") {}, mode: .default)
      ready.withLock { $0 = loop }
      try loop.run()
    }
    try thread.start()
    #expect(eventually { ready.withLock { $0 } != nil })
    let loop = ready.withLock { $0! }
    let observer = LoopObserver(activities: .afterWaiting) { _, _ in heard.withLock { $0 += 1 } }
    loop.add(observer, mode: .default)
    loop.wakeUp()
    #expect(eventually { heard.withLock { $0 } >= 1 })
    loop.stop()
    try thread.join()
  }
}
