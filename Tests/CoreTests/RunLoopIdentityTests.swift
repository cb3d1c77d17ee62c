import Glibc
import RunLoopCore
import Testing

@Suite("One run loop per thread")
struct RunLoopIdentityTests {
  @Test func currentIsCreatedOnceAndStaysTheSameForTheThread() throws {
    let (first, second, tid) = try onNewThread { _ in
      (EventRunLoop.current, EventRunLoop.current, RunLoopThread.current?.threadID)
    }
    #expect(first === second)
    #expect(first.threadID == tid)
    #expect(!first.isMain)
  }

  @Test func differentThreadsHaveDifferentLoops() throws {
    let one = try onNewThread { _ in EventRunLoop.current }
    let two = try onNewThread { _ in EventRunLoop.current }
    #expect(one !== two)
    #expect(one.id != two.id)
  }

  @Test func threadLoopIsTheCurrentLoopOfItsThread() throws {
    let same = try onNewThread { loop in loop === EventRunLoop.current }
    #expect(same)
  }

  @Test func mainLoopIsReachableFromAnyThreadAndBelongsToTheMainThread() throws {
    let fromWorker = try onNewThread { _ in EventRunLoop.main }
    #expect(fromWorker === EventRunLoop.main)
    #expect(fromWorker.isMain)
    #expect(fromWorker.threadID == getpid())
  }

  @Test func loopOfAnExitedThreadSaysSoAndAbandonsPerformRequests() throws {
    let loop = try onNewThread { loop in loop }
    #expect(eventually { loop.threadHasExited })
    let request = loop.perform { Issue.record("must not run") }
    #expect(request.state == .abandoned)
    #expect(throws: RunLoopError.loopThreadExited("")) { try loop.performAndWait {} }
  }
}

@Suite("Modes and common modes")
struct ModeTests {
  @Test func defaultModeIsCommonFromTheStart() throws {
    let common = try onNewThread { loop in loop.commonModes }
    #expect(common == [.default])
  }

  @Test func sourceInCommonModesJoinsModesAddedLater() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let source = CustomInputSource(
        name: "c", schedule: { _, mode in recorder.mark("schedule:\(mode)") },
        cancel: { _, mode in recorder.mark("cancel:\(mode)") }
      ) { recorder.mark("perform:\(EventRunLoop.current.currentMode!)") }
      try loop.add(source, mode: .common)
      let tracking: LoopMode = "tracking"
      #expect(!loop.contains(source, mode: tracking))
      loop.addCommonMode(tracking)
      #expect(loop.contains(source, mode: tracking))
      source.signal()
      try loop.run(mode: tracking, timeout: .zero)
      loop.remove(source, mode: .common)
      return recorder.log
    }
    #expect(
      log == [
        "schedule:default", "schedule:tracking", "perform:tracking", "cancel:default",
        "cancel:tracking",
      ])
  }

  @Test func currentModeIsTheInnermostRunsModeAndNilOutsideRuns() throws {
    let modes = try onNewThread { loop -> [String] in
      let seen = GuardedState<[String]>([])
      let inner: LoopMode = "inner"
      let innerSource = CustomInputSource {
        seen.withLock { $0.append(loop.currentMode?.name ?? "nil") }
      }
      try loop.add(innerSource, mode: inner)
      let outerSource = CustomInputSource {
        seen.withLock { $0.append(loop.currentMode?.name ?? "nil") }
        innerSource.signal()
        _ = try? loop.run(mode: inner, timeout: .zero)
        seen.withLock { $0.append(loop.currentMode?.name ?? "nil") }
      }
      try loop.add(outerSource, mode: .default)
      seen.withLock { $0.append(loop.currentMode?.name ?? "nil") }
      outerSource.signal()
      try loop.run(mode: .default, timeout: .zero)
      seen.withLock { $0.append(loop.currentMode?.name ?? "nil") }
      return seen.withLock { $0 }
    }
    #expect(modes == ["nil", "default", "inner", "default", "nil"])
  }

  @Test func sourceSignalledWhileItsModeIsNotRunningFiresWhenTheModeRuns() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let other: LoopMode = "other"
      let held = CustomInputSource(name: "held") { recorder.mark("held") }
      let keepAlive = CustomInputSource(name: "keep") {}
      try loop.add(held, mode: other)
      try loop.add(keepAlive, mode: .default)
      held.signal()
      loop.wakeUp()
      let first = try loop.run(mode: .default, timeout: .milliseconds(20))
      recorder.mark("default:\(first)")
      let second = try loop.run(mode: other, timeout: .zero)
      recorder.mark("other:\(second)")
      return recorder.log
    }
    #expect(log == ["default:timedOut", "held", "other:timedOut"])
  }
}

@Suite("The run API")
struct RunAPITests {
  @Test func runReturnsFinishedWhenTheLastSourceLeaves() throws {
    let result = try onNewThread { loop -> RunResult in
      let source = CustomInputSource(name: "once") {}
      let remover = GuardedState<CustomInputSource?>(nil)
      remover.withLock {
        $0 = CustomInputSource(name: "remover") {
          EventRunLoop.current.remove(source, mode: .default)
          remover.withLock { $0?.invalidate() }
        }
      }
      let removerSource = remover.withLock { $0! }
      try loop.add(source, mode: .default)
      try loop.add(removerSource, mode: .default)
      removerSource.signal()
      return try loop.run()
    }
    #expect(result == .finished)
  }

  @Test func runEndsWhenStoppedFromAnotherThread() throws {
    let result = try onNewThread { loop -> RunResult in
      try loop.add(CustomInputSource {}, mode: .default)
      let stopper = RunLoopThread(name: "stopper") { _ in
        while !loop.isRunning { usleep(200) }
        loop.stop()
      }
      try stopper.start()
      let result = try loop.run()
      try stopper.join()
      return result
    }
    #expect(result == .stopped)
  }

  @Test func runUntilReturnsTimedOutAtTheDeadline() throws {
    let (result, late) = try onNewThread { loop -> (RunResult, Bool) in
      try loop.add(CustomInputSource {}, mode: .default)
      let deadline = ContinuousClock.now + .milliseconds(30)
      let result = try loop.run(until: deadline)
      return (result, ContinuousClock.now >= deadline)
    }
    #expect(result == .timedOut)
    #expect(late)
  }

  @Test func runModeBeforeDeadlineReturnsWhetherItRan() throws {
    let (empty, ran, performed) = try onNewThread { loop -> (Bool, Bool, Int) in
      let count = GuardedState(0)
      let empty = try loop.run(mode: "nothing", before: .now + .milliseconds(10))
      let source = CustomInputSource { count.withLock { $0 += 1 } }
      try loop.add(source, mode: .default)
      source.signal()
      let ran = try loop.run(mode: .default, before: .now + .seconds(10))
      return (empty, ran, count.withLock { $0 })
    }
    #expect(!empty)
    #expect(ran)
    #expect(performed == 1)
  }

  @Test func stopEndsOnlyTheInnermostRun() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let inner = CustomInputSource(name: "inner") {
        EventRunLoop.current.stop()
      }
      let outer = CustomInputSource(name: "outer") {
        inner.signal()
        let result = try? EventRunLoop.current.run(mode: .default, timeout: .seconds(10))
        recorder.mark("inner:\(result!)")
      }
      try loop.add(inner, mode: .default)
      try loop.add(outer, mode: .default)
      outer.signal()
      let result = try loop.run(mode: .default, timeout: .milliseconds(20))
      recorder.mark("outer:\(result)")
      return recorder.log
    }
    #expect(log == ["inner:stopped", "outer:timedOut"])
  }

  @Test func stoppingALoopThatIsNotRunningIsForgotten() throws {
    let result = try onNewThread { loop -> RunResult in
      try loop.add(CustomInputSource {}, mode: .default)
      loop.stop()
      return try loop.run(mode: .default, timeout: .milliseconds(20))
    }
    #expect(result == .timedOut)
  }

  @Test func nestedRunsWorkFromAnyCalloutInAnyMode() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let modal: LoopMode = "modal"
      let modalSource = CustomInputSource(name: "modal") { recorder.mark("modal") }
      try loop.add(modalSource, mode: modal)
      let again = CustomInputSource(name: "again") { recorder.mark("again") }
      try loop.add(again, mode: .default)
      loop.perform {
        modalSource.signal()
        let modalResult = try? loop.run(mode: modal, timeout: .zero)
        recorder.mark("modal run:\(modalResult!)")
        again.signal()
        let sameMode = try? loop.run(
          mode: .default, timeout: .seconds(5), returnAfterSourceHandled: true)
        recorder.mark("default run:\(sameMode!)")
      }
      try loop.run(mode: .default, timeout: .zero)
      return recorder.log
    }
    #expect(log == ["modal", "modal run:timedOut", "again", "default run:handledSource"])
  }
}

@Suite("Bad input")
struct BadInputTests {
  @Test func runningALoopFromAnotherThreadIsAnError() throws {
    let other = try onNewThread { _ in EventRunLoop.current }
    #expect(throws: RunLoopError.notOwningThread("")) {
      try other.run(mode: .default, timeout: .zero)
    }
    #expect(throws: RunLoopError.notOwningThread("")) { try other.run() }
  }

  @Test func runningInTheCommonPseudoModeIsAnError() throws {
    try onNewThread { loop in
      #expect(throws: RunLoopError.invalidArgument("")) {
        try loop.run(mode: .common, timeout: .zero)
      }
    }
  }

  @Test func nonFiniteSecondsFollowDocumentedRules() throws {
    let results = try onNewThread { loop -> [RunResult] in
      try loop.add(CustomInputSource {}, mode: .default)
      #expect(throws: RunLoopError.invalidArgument("")) {
        try loop.run(mode: .default, seconds: .nan)
      }
      let negative = try loop.run(mode: .default, seconds: -.infinity)
      let stopper = RunLoopThread(name: "stopper") { _ in
        while !loop.isRunning { usleep(200) }
        loop.stop()
      }
      try stopper.start()
      let forever = try loop.run(mode: .default, seconds: .infinity)
      try stopper.join()
      return [negative, forever]
    }
    #expect(results == [.timedOut, .stopped])
  }

  @Test func addingASourceTwiceToOneModeIsANoOp() throws {
    let (schedules, performs) = try onNewThread { loop -> (Int, Int) in
      let schedules = GuardedState(0)
      let performs = GuardedState(0)
      let source = CustomInputSource(schedule: { _, _ in schedules.withLock { $0 += 1 } }) {
        performs.withLock { $0 += 1 }
      }
      try loop.add(source, mode: .default)
      try loop.add(source, mode: .default)
      source.signal()
      try loop.run(mode: .default, timeout: .zero)
      return (schedules.withLock { $0 }, performs.withLock { $0 })
    }
    #expect(schedules == 1)
    #expect(performs == 1)
  }

  @Test func anInvalidatedSourceCannotBeAddedAndIgnoresSignals() throws {
    try onNewThread { loop in
      let cancels = GuardedState(0)
      let source = CustomInputSource(cancel: { _, _ in cancels.withLock { $0 += 1 } }) {
        Issue.record("an invalidated source must not perform")
      }
      try loop.add(source, mode: .default)
      source.invalidate()
      source.invalidate()
      #expect(!source.isValid)
      #expect(cancels.withLock { $0 } == 1)
      #expect(!loop.contains(source, mode: .default))
      source.signal()
      #expect(!source.isSignalled)
      #expect(throws: RunLoopError.invalidated("")) { try loop.add(source, mode: .default) }
      #expect(try loop.run(mode: .default, timeout: .zero) == .finished)
    }
  }

  @Test func removingASourceThatIsNotThereIsANoOp() throws {
    try onNewThread { loop in
      let source = CustomInputSource(cancel: { _, _ in Issue.record("no cancel expected") }) {}
      loop.remove(source, mode: .default)
      loop.remove(source, mode: "elsewhere")
    }
  }
}
