import Dispatch
import Glibc
import RunLoopCore
import Testing

/// What other threads see of a loop's runs (``EventRunLoop/isRunning``,
/// ``EventRunLoop/currentMode``, ``EventRunLoop/stop()``), which the loop publishes without
/// a lock, and a zero-timeout run, whose non-blocking check takes the wake-ups made in it.
@Suite("Active runs seen from other threads")
struct ActiveRunsTests {
  @Test func aStopMadeBeforeANestedRunBeganEndsTheOuterRunAfterIt() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let nested: LoopMode = "nested"
      try loop.add(CustomInputSource(name: "keep-nested") {}, mode: nested)
      let outer = CustomInputSource(name: "outer") {
        // The request lands on the outer run, the innermost now; the run nested next has
        // none of its own, and hands the outer one's back when it ends.
        EventRunLoop.current.stop()
        let result = try? EventRunLoop.current.run(mode: nested, timeout: .milliseconds(5))
        recorder.mark("nested:\(result!)")
      }
      try loop.add(outer, mode: .default)
      outer.signal()
      let result = try loop.run(mode: .default, timeout: .seconds(10))
      recorder.mark("outer:\(result)")
      return recorder.log
    }
    #expect(log == ["nested:timedOut", "outer:stopped"])
  }

  @Test func anotherThreadSeesTheInnermostRunsModeAndNoneAfterTheRuns() throws {
    let seen = GuardedState<[String]>([])
    let worker = RunLoopThread(name: "modes") { thread in
      let loop = thread.runLoop
      let nested: LoopMode = "nested"
      let asked = DispatchSemaphore(value: 0)
      let answered = DispatchSemaphore(value: 0)
      let observer = RunLoopThread(name: "observer") { _ in
        for _ in 0..<2 {
          asked.wait()
          seen.withLock { $0.append(loop.currentMode?.name ?? "none") }
          answered.signal()
        }
      }
      try observer.start()
      let inner = CustomInputSource(name: "inner") {
        asked.signal()
        answered.wait()
        EventRunLoop.current.stop()
      }
      try loop.add(inner, mode: nested)
      let outer = CustomInputSource(name: "outer") {
        inner.signal()
        _ = try? EventRunLoop.current.run(mode: nested, timeout: .seconds(10))
        asked.signal()
        answered.wait()
        EventRunLoop.current.stop()
      }
      try loop.add(outer, mode: .default)
      outer.signal()
      _ = try loop.run(mode: .default, timeout: .seconds(10))
      try observer.join()
      seen.withLock { $0.append(loop.currentMode?.name ?? "none") }
    }
    try worker.start()
    try worker.join()
    #expect(seen.withLock { $0 } == ["nested", "default", "none"])
  }

  @Test func aLoopIsRunningForOtherThreadsOnlyWhileARunIsActive() throws {
    let (before, during, after) = try onNewThread { loop -> (Bool, Bool, Bool) in
      let before = loop.isRunning
      let duringRun = GuardedState(false)
      let source = CustomInputSource(name: "ask") {
        let answer = try? onNewThread { _ in loop.isRunning }
        duringRun.withLock { $0 = answer ?? false }
      }
      try loop.add(source, mode: .default)
      source.signal()
      _ = try loop.run(mode: .default, timeout: .zero)
      return (before, duringRun.withLock { $0 }, loop.isRunning)
    }
    #expect(!before)
    #expect(during)
    #expect(!after)
  }

  @Test func aWakeUpDuringAZeroTimeoutRunLeavesNothingToEndTheNextRunsSleep() throws {
    let (result, passes) = try onNewThread { loop -> (RunResult, Int) in
      let source = CustomInputSource(name: "wake") { EventRunLoop.current.wakeUp() }
      try loop.add(source, mode: .default)
      source.signal()
      // The zero-timeout run never sleeps: its non-blocking check takes the note the
      // wake-up made in its call-out, and leaves nothing behind for the next run's sleep.
      _ = try loop.run(mode: .default, timeout: .zero)
      let recorder = LoopRecorder()
      loop.addInstrument(recorder)
      let result = try loop.run(mode: .default, timeout: .milliseconds(30))
      loop.removeInstrument(recorder)
      return (result, recorder.log.filter { $0 == "beforeTimers" }.count)
    }
    #expect(result == .timedOut)
    #expect(passes == 1)
  }
}
