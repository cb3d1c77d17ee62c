import Glibc
import RunLoopCore
import Testing

/// Behaviours matched to CFRunLoop on this machine (issue 13; the same scenarios run on both
/// loops in RunLoopParityTests).
@Suite("Fidelity to CFRunLoop")
struct CoreFoundationFidelityTests {
  /// Calls `body` at the activities it wants, as an instrument (told before observers).
  final class Hook: RunLoopInstrument, @unchecked Sendable {
    let body: @Sendable (LoopActivity) -> Void
    init(_ body: @escaping @Sendable (LoopActivity) -> Void) {
      self.body = body
    }

    /// A hook that calls `action` the first time the loop reaches `activity`.
    static func once(at activity: LoopActivity, _ action: @escaping @Sendable () -> Void) -> Hook {
      let first = FirstTime()
      return Hook { reached in
        if reached == activity, first.first() { action() }
      }
    }

    /// A hook that calls `first` the first time the loop is about to sleep and `later` each
    /// time after that.
    static func beforeWaiting(
      first: @escaping @Sendable () -> Void, later: @escaping @Sendable () -> Void
    ) -> Hook {
      let firstTime = FirstTime()
      return Hook { reached in
        guard reached == .beforeWaiting else { return }
        if firstTime.first() { first() } else { later() }
      }
    }
    var interests: InstrumentInterests { .activities }
    var notificationOrder: Int { 1 }
    func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
      body(activity)
    }
  }

  // 1. Wake-ups with nothing to wake are dropped; nothing queued is lost.

  @Test func wakeUpWhileNoRunIsActiveIsDropped() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      loop.addInstrument(recorder)
      loop.wakeUp()
      let source = CustomInputSource(name: "late") {}
      try loop.add(source, mode: "other")
      loop.addCommonMode("tracking")  // wakes the loop: nothing to wake
      let result = try loop.run(mode: .default, timeout: .milliseconds(30))
      recorder.mark("result:\(result)")
      return recorder.log
    }
    // One pass, which sleeps until the timeout: no empty pass for the wake-ups.
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:timedOut",
      ])
  }

  @Test func wakeUpBetweenWakingAndTheNextPassIsDropped() throws {
    let pipe = Pipe()
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      let watch = DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in
        _ = pipe.readByte()
        recorder.mark("read")
        loop.wakeUp()  // after the wake-up, before the next pass: dropped, as in CF
      }
      try loop.add(watch, mode: .default)
      loop.addInstrument(recorder)
      let writer = RunLoopThread(name: "writer") { _ in
        guard eventually(10, { recorder.log.contains("beforeWaiting") }) else { return }
        pipe.writeByte()
      }
      try writer.start()
      let result = try loop.run(mode: .default, timeout: .milliseconds(300))
      try writer.join()
      recorder.mark("result:\(result)")
      return recorder.log
    }
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "read",
        "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:timedOut",
      ])
  }

  @Test func wakeUpPendingWhenARunEndsLeavesLaterWakeUpsDroppedWhileNotRunning() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      loop.addInstrument(recorder)
      loop.addInstrument(
        Hook.once(at: .entry) {
          loop.wakeUp()  // its event is still pending when the run ends at once
          loop.stop()
        })
      for timeout in [Duration.seconds(5), .milliseconds(30), .milliseconds(30)] {
        let result = try loop.run(mode: .default, timeout: timeout)
        recorder.mark("result:\(result)")
        loop.wakeUp()  // no run active: dropped
      }
      return recorder.log
    }
    let pass = ["beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting"]
    // The pending event ends the next run's first sleep (as in CFRunLoop); after that, the
    // loop is back to dropping the wake-ups made while no run is active.
    #expect(
      log == ["entry", "exit", "result:stopped"] + ["entry"] + pass + pass
        + ["exit", "result:timedOut"] + ["entry"] + pass + ["exit", "result:timedOut"])
  }

  @Test func wakeUpDuringAPassEndsTheNextSleep() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      loop.addInstrument(recorder)
      loop.addInstrument(Hook.once(at: .beforeSources) { loop.wakeUp() })
      let result = try loop.run(mode: .default, timeout: .milliseconds(30))
      recorder.mark("result:\(result)")
      return recorder.log
    }
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
        "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:timedOut",
      ])
  }

  @Test func requestQueuedAfterThePassLookedStillEndsTheNextSleep() throws {
    let (log, elapsed) = try onNewThread { loop -> ([String], Duration) in
      let recorder = LoopRecorder()
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      loop.addInstrument(recorder)
      loop.addInstrument(
        Hook.once(at: .beforeWaiting) {
          loop.perform {
            recorder.mark("block")
            loop.stop()
          }
        })
      let start = ContinuousClock.now
      let result = try loop.run(mode: .default, timeout: .seconds(20))
      recorder.mark("result:\(result)")
      return (recorder.log, .now - start)
    }
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "block",
        "exit", "result:stopped",
      ])
    #expect(elapsed < .seconds(10))
  }

  // A request, a stop or a removal that another thread makes while the loop is between its
  // wake-up and its next pass has its wake-up dropped; the next pass must still see it:
  // requests in step 3, a stop or an empty mode before it sleeps. Hammered from another
  // thread with no pause, every one of them must end its run (a lost one would hang here).
  @Test(.timeLimit(.minutes(1)))
  func wakeUpsDroppedBetweenPassesLoseNothing() throws {
    let worker = try startLoopThread(name: "target")
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    for _ in 0..<2000 {
      let ran = GuardedState(false)
      loop.perform { ran.withLock { $0 = true } }
      #expect(eventually(10) { ran.withLock { $0 } })
    }
    let outcomes = try onNewThread { own -> [RunResult] in
      var results: [RunResult] = []
      for round in 0..<200 {
        let source = CustomInputSource(name: "only") {}
        try own.add(source, mode: .default)
        let helper = RunLoopThread(name: "remover") { _ in
          // A stop is for a run that has begun (one made before is forgotten).
          guard eventually(10, { own.isRunning }) else { return }
          if round % 2 == 0 { own.stop() } else { own.remove(source, mode: .default) }
        }
        try helper.start()
        // Another thread wakes the loop again and again meanwhile, so that the stop or the
        // removal often lands between a wake-up and the next pass.
        let waker = RunLoopThread(name: "waker") { _ in
          for _ in 0..<50 { own.wakeUp() }
        }
        try waker.start()
        results.append(try own.run(mode: .default, timeout: .seconds(20)))
        try helper.join()
        try waker.join()
        own.remove(source, mode: .default)
      }
      return results
    }
    #expect(outcomes.allSatisfy { $0 == .stopped || $0 == .finished })
  }

  // 2. Stop before the first pass.

  @Test func stopBeforeTheFirstPassEndsTheRunAtOnce() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      loop.addInstrument(recorder)
      loop.addInstrument(Hook.once(at: .entry) { loop.stop() })
      let result = try loop.run(mode: .default, timeout: .seconds(20))
      recorder.mark("result:\(result)")
      return recorder.log
    }
    #expect(log == ["entry", "exit", "result:stopped"])
  }

  // 7. Custom sources of equal order run in the order they were first signalled.

  @Test func sourcesOfEqualOrderRunInTheOrderTheyWereFirstSignalled() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let sources = (0..<6).map { index in
        CustomInputSource(name: "s\(index)") { recorder.mark("s\(index)") }
      }
      for source in sources { try loop.add(source, mode: .default) }
      for index in [3, 0, 5, 1, 4, 2] { sources[index].signal() }
      try loop.run(mode: .default, timeout: .zero)
      recorder.mark("|")
      // Signalled again before it ran, a source keeps its place.
      for index in [3, 0, 5, 3] { sources[index].signal() }
      try loop.run(mode: .default, timeout: .zero)
      recorder.mark("|")
      for index in [2, 1] { sources[index].signal() }
      try loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
      return recorder.log
    }
    #expect(log == ["s3", "s0", "s5", "s1", "s4", "s2", "|", "s3", "s0", "s5", "|", "s2"])
  }

  // Found while probing CF: step 4 performs the sources signalled when it began; one
  // signalled by a call-out of step 4 waits for the next pass, whatever its order.
  @Test func sourceSignalledDuringStepFourWaitsForTheNextPass() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let later = CustomInputSource(name: "later", order: 2) { recorder.mark("later") }
      let earlier = CustomInputSource(name: "earlier", order: 0) { recorder.mark("earlier") }
      let first = CustomInputSource(name: "first", order: 1) {
        recorder.mark("first")
        later.signal()
        earlier.signal()
      }
      for source in [first, later, earlier] { try loop.add(source, mode: .default) }
      first.signal()
      loop.addInstrument(recorder)
      try loop.run(mode: .default, timeout: .zero)
      recorder.mark("|")
      try loop.run(mode: .default, timeout: .zero)
      return recorder.log
    }
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "first", "exit", "|", "entry", "beforeTimers",
        "beforeSources", "earlier", "later", "exit",
      ])
  }
}

/// `true` the first time it is asked, `false` ever after.
final class FirstTime: Sendable {
  private let state = GuardedState(true)
  func first() -> Bool {
    state.withLock { value in
      defer { value = false }
      return value
    }
  }
}
