import Glibc
import RunLoopCore
import Testing

@Suite("The sequence of events")
struct SequenceOfEventsTests {
  @Test func emptyModeReturnsFinishedBeforeAnyActivity() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      loop.addInstrument(recorder)
      let result = try loop.run(mode: .default, timeout: .milliseconds(50))
      recorder.mark("result:\(result)")
      return recorder.log
    }
    #expect(log == ["result:finished"])
  }

  @Test func signalledSourceRunsAfterBeforeSourcesAndTheRunTimesOut() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder([.activities, .callouts])
      let source = CustomInputSource(name: "s") { recorder.mark("perform") }
      try loop.add(source, mode: .default)
      source.signal()
      loop.addInstrument(recorder)
      let result = try loop.run(mode: .default, timeout: .milliseconds(30))
      recorder.mark("result:\(result)")
      return recorder.log
    }
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "perform", "callout:source:s",
        "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit", "result:timedOut",
      ])
  }

  @Test func returnAfterSourceHandledRunsOnlyTheLowestOrderSource() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let late = CustomInputSource(name: "five", order: 5) { recorder.mark("five") }
      let early = CustomInputSource(name: "one", order: 1) { recorder.mark("one") }
      try loop.add(late, mode: .default)
      try loop.add(early, mode: .default)
      late.signal()
      early.signal()
      loop.addInstrument(recorder)
      var result = try loop.run(
        mode: .default, timeout: .seconds(5), returnAfterSourceHandled: true)
      recorder.mark("result:\(result)")
      result = try loop.run(mode: .default, timeout: .seconds(5), returnAfterSourceHandled: true)
      recorder.mark("result:\(result)")
      return recorder.log
    }
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "one", "exit", "result:handledSource",
        "entry", "beforeTimers", "beforeSources", "five", "exit", "result:handledSource",
      ])
  }

  @Test func zeroTimeoutNeverSleepsNorReportsWaiting() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let source = CustomInputSource { recorder.mark("perform") }
      try loop.add(source, mode: .default)
      loop.addInstrument(recorder)
      var result = try loop.run(mode: .default, timeout: .zero)
      recorder.mark("result:\(result)")
      source.signal()
      result = try loop.run(mode: .default, timeout: .seconds(-3))
      recorder.mark("result:\(result)")
      return recorder.log
    }
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "exit", "result:timedOut",
        "entry", "beforeTimers", "beforeSources", "perform", "exit", "result:timedOut",
      ])
  }

  @Test func wakeUpRestartsThePassWithoutEndingTheRun() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let source = CustomInputSource { recorder.mark("perform") }
      try loop.add(source, mode: .default)
      let woken = GuardedState(false)
      loop.addInstrument(recorder)
      let waker = RunLoopThread(name: "waker") { _ in
        // Wake the loop once it sleeps, then stop it once it sleeps again.
        while !recorder.log.contains("beforeWaiting") { usleep(500) }
        woken.withLock { $0 = true }
        loop.wakeUp()
        while recorder.log.filter({ $0 == "beforeWaiting" }).count < 2 { usleep(500) }
        loop.stop()
      }
      try waker.start()
      let result = try loop.run(mode: .default, timeout: .seconds(20))
      recorder.mark("result:\(result)")
      try waker.join()
      return recorder.log
    }
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
        "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit", "result:stopped",
      ])
  }

  @Test func performRequestsRunBeforeSourcesAndNeverCountAsHandled() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let source = CustomInputSource { recorder.mark("source") }
      try loop.add(source, mode: .default)
      loop.perform { recorder.mark("block1") }
      loop.perform { recorder.mark("block2") }
      source.signal()
      loop.addInstrument(recorder)
      let first = try loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
      recorder.mark("result:\(first)")
      loop.perform { recorder.mark("block3") }
      let second = try loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
      recorder.mark("result:\(second)")
      return recorder.log
    }
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "block1", "block2", "source", "exit",
        "result:handledSource",
        "entry", "beforeTimers", "beforeSources", "block3", "exit", "result:timedOut",
      ])
  }
}
