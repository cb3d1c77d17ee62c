import Glibc
import Synchronization
import Testing

@testable import RunLoopCore

@Suite("Perform requests")
struct PerformRequestTests {
  // A request queued by a request runs at the pass's next perform point (after step 9), not
  // in the batch that was taken at step 3 (CFRunLoop behaves the same way).
  @Test func requestsRunInFIFOOrderAndAllQueuedBeforeAPassRunInIt() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      for index in 0..<5 {
        loop.perform { recorder.mark("p\(index)") }
      }
      loop.perform {
        recorder.mark("p5")
        loop.perform { recorder.mark("queued by p5") }
      }
      loop.addInstrument(recorder)
      try loop.run(mode: .default, timeout: .zero)
      return recorder.log.filter { $0 != "entry" && $0 != "exit" }
    }
    #expect(
      log == [
        "beforeTimers", "beforeSources", "p0", "p1", "p2", "p3", "p4", "p5", "queued by p5",
      ])
  }

  @Test func requestsWaitForOneOfTheirModes() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let special: LoopMode = "special"
      try loop.add(CustomInputSource {}, mode: special)
      try loop.add(CustomInputSource {}, mode: .default)
      loop.perform(inModes: [special]) { recorder.mark("special") }
      loop.perform(inModes: [.common]) { recorder.mark("common") }
      try loop.run(mode: .default, timeout: .zero)
      recorder.mark("|")
      try loop.run(mode: special, timeout: .zero)
      return recorder.log
    }
    #expect(log == ["common", "|", "special"])
  }

  @Test func performFromAnotherThreadWakesTheLoop() throws {
    let (result, ran) = try onNewThread { loop -> (RunResult, Bool) in
      try loop.add(CustomInputSource {}, mode: .default)
      let ran = GuardedState(false)
      let poster = RunLoopThread(name: "poster") { _ in
        while !loop.isRunning { usleep(200) }
        loop.perform {
          ran.withLock { $0 = true }
          loop.stop()
        }
      }
      try poster.start()
      let result = try loop.run(mode: .default, timeout: .seconds(60))
      try poster.join()
      return (result, ran.withLock { $0 })
    }
    #expect(result == .stopped)
    #expect(ran)
  }

  @Test func performAndWaitReturnsAfterTheBodyRanOnTheTargetThread() throws {
    let worker = RunLoopThread(name: "target") { thread in
      try thread.runLoop.add(CustomInputSource {}, mode: .default)
      try thread.runLoop.run()
    }
    try worker.start()
    let ranOn = GuardedState<pid_t>(0)
    try worker.runLoop.performAndWait { ranOn.withLock { $0 = RunLoopThread.current!.threadID! } }
    #expect(ranOn.withLock { $0 } == worker.threadID)
    worker.runLoop.stop()
    try worker.join()
  }

  @Test func performAndWaitOnTheOwnThreadRunsInlineInsteadOfDeadlocking() throws {
    let order = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      try loop.performAndWait { recorder.mark("inline") }
      recorder.mark("after")
      return recorder.log
    }
    #expect(order == ["inline", "after"])
  }

  @Test func performAndWaitGivesUpAtItsDeadlineAndTheRequestNeverRuns() throws {
    let idle = try onNewThread { loop in loop }
    _ = idle
    let worker = RunLoopThread(name: "not running its loop") { thread in
      while !thread.isCancelled { usleep(1000) }
      try thread.runLoop.add(CustomInputSource {}, mode: .default)
      try thread.runLoop.run(mode: .default, timeout: .milliseconds(20))
    }
    try worker.start()
    let ran = GuardedState(false)
    #expect(throws: RunLoopError.timedOut("")) {
      try worker.runLoop.performAndWait(deadline: .now + .milliseconds(30)) {
        ran.withLock { $0 = true }
      }
    }
    worker.cancel()
    try worker.join()
    #expect(!ran.withLock { $0 })
  }

  @Test func cancelledRequestNeverRuns() throws {
    let (log, cancelledFirst, cancelledAgain, state) = try onNewThread {
      loop -> ([String], Bool, Bool, PerformRequest.State) in
      let recorder = LoopRecorder()
      let doomed = loop.perform { recorder.mark("doomed") }
      loop.perform { recorder.mark("kept") }
      let first = doomed.cancel()
      let again = doomed.cancel()
      try loop.run(mode: .default, timeout: .zero)
      return (recorder.log, first, again, doomed.state)
    }
    #expect(log == ["kept"])
    #expect(cancelledFirst)
    #expect(!cancelledAgain)
    #expect(state == .cancelled)
  }

  @Test func finishedRequestCannotBeCancelled() throws {
    let (cancelled, state) = try onNewThread { loop -> (Bool, PerformRequest.State) in
      let request = loop.perform {}
      try loop.run(mode: .default, timeout: .zero)
      return (request.cancel(), request.state)
    }
    #expect(!cancelled)
    #expect(state == .finished)
  }

  @Test func pendingRequestsMakeAModeNonEmpty() throws {
    let result = try onNewThread { loop -> RunResult in
      loop.perform {}
      return try loop.run(mode: .default, timeout: .zero)
    }
    #expect(result == .timedOut)
  }

  @Test func cancelledRequestNoLongerKeepsItsModeFromFinishing() throws {
    let result = try onNewThread { loop -> RunResult in
      loop.perform {}.cancel()
      return try loop.run(mode: .default, timeout: .seconds(30))
    }
    #expect(result == .finished)
  }

  @Test func cancelledRequestReleasesWhatItsClosureCapturedAtOnce() throws {
    final class Payload: Sendable {}
    let (releasedAtCancel, laterRequestRan) = try onNewThread { loop -> (Bool, Bool) in
      weak var watched: Payload?
      let request: PerformRequest
      do {
        let payload = Payload()
        watched = payload
        // In a mode the loop never runs, so only `cancel()` can let go of the closure.
        request = loop.perform(inModes: [LoopMode("never-run")]) { _ = payload }
      }
      let heldWhilePending = watched != nil
      request.cancel()
      let released = heldWhilePending && watched == nil
      let ran = GuardedState(false)
      loop.perform { ran.withLock { $0 = true } }
      try loop.run(mode: .default, timeout: .zero)
      return (released, ran.withLock { $0 })
    }
    #expect(releasedAtCancel)
    #expect(laterRequestRan)
  }

  @Test func requestCancelledFromAnotherThreadWhileQueuedNeverRuns() throws {
    let (ran, state) = try onNewThread { loop -> (Bool, PerformRequest.State) in
      let ran = GuardedState(false)
      let request = loop.perform { ran.withLock { $0 = true } }
      let canceller = RunLoopThread(name: "canceller") { _ in request.cancel() }
      try canceller.start()
      try canceller.join()
      try loop.run(mode: .default, timeout: .zero)
      return (ran.withLock { $0 }, request.state)
    }
    #expect(!ran)
    #expect(state == .cancelled)
  }

  @Test func aRequestTheCallerStillHoldsIsNeverReused() throws {
    let (reusedWhileHeld, state) = try onNewThread { loop -> (Bool, PerformRequest.State) in
      let kept = loop.perform {}
      try loop.run(mode: .default, timeout: .zero)
      var reused = false
      for _ in 0..<20 {
        // `kept` is alive, so its address cannot be handed out again by malloc: the same
        // identity would mean the loop reused a request someone still holds.
        if ObjectIdentifier(loop.perform {}) == ObjectIdentifier(kept) { reused = true }
        try loop.run(mode: .default, timeout: .zero)
      }
      return (reused, kept.state)
    }
    #expect(!reusedWhileHeld)
    #expect(state == .finished)
  }

  @Test func performWithABodyAloneIsPerformWithTheDefaultModesAndName() throws {
    let (short, full, order) = try onNewThread {
      loop -> (PerformRequest, PerformRequest, [String]) in
      let recorder = GuardedState<[String]>([])
      let short = loop.perform { recorder.withLock { $0.append("short") } }
      let full = loop.perform(inModes: [.common], name: "perform") {
        recorder.withLock { $0.append("full") }
      }
      try loop.run(mode: .default, timeout: .zero)
      return (short, full, recorder.withLock { $0 })
    }
    #expect(short.name == full.name)
    #expect(short.modes == full.modes)
    #expect(short.modes == [.common])
    #expect(order == ["short", "full"])
    #expect(short.state == .finished && full.state == .finished)
  }
}
