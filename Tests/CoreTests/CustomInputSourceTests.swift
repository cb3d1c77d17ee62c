import Glibc
import RunLoopCore
import Testing

@Suite("Custom input sources")
struct CustomInputSourceTests {
  @Test func scheduleRunsOnAddPerformOnSignalAndCancelOnRemove() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let source = CustomInputSource(
        name: "s",
        schedule: { scheduledLoop, mode in
          recorder.mark("schedule:\(mode):\(scheduledLoop === loop)")
        },
        cancel: { _, mode in recorder.mark("cancel:\(mode)") }
      ) { recorder.mark("perform:\(EventRunLoop.current === loop)") }
      try loop.add(source, mode: .default)
      source.signal()
      try loop.run(mode: .default, timeout: .zero)
      try loop.run(mode: .default, timeout: .zero)
      loop.remove(source, mode: .default)
      return recorder.log
    }
    #expect(log == ["schedule:default:true", "perform:true", "cancel:default"])
  }

  @Test func signalsBeforeAPassCoalesceIntoOnePerform() throws {
    let performs = try onNewThread { loop -> Int in
      let count = GuardedState(0)
      let source = CustomInputSource { count.withLock { $0 += 1 } }
      try loop.add(source, mode: .default)
      for _ in 0..<5 { source.signal() }
      try loop.run(mode: .default, timeout: .zero)
      return count.withLock { $0 }
    }
    #expect(performs == 1)
  }

  @Test func signalPlusWakeUpFromAnotherThreadWakesASleepingLoop() throws {
    let (result, performed) = try onNewThread { loop -> (RunResult, Bool) in
      let performed = GuardedState(false)
      let source = CustomInputSource { performed.withLock { $0 = true } }
      try loop.add(source, mode: .default)
      let recorder = LoopRecorder()
      loop.addInstrument(recorder)
      let signaller = RunLoopThread(name: "signaller") { _ in
        while !recorder.log.contains("beforeWaiting") { usleep(200) }
        source.signal()
        loop.wakeUp()
      }
      try signaller.start()
      // A long timeout: only the signal can end this run early.
      let result = try loop.run(
        mode: .default, timeout: .seconds(60), returnAfterSourceHandled: true)
      try signaller.join()
      return (result, performed.withLock { $0 })
    }
    #expect(result == .handledSource)
    #expect(performed)
  }

  @Test func signalAndWakeUpWakesEveryLoopTheSourceIsOn() throws {
    let source = CustomInputSource(name: "shared") {}
    let results = GuardedState<[RunResult]>([])
    let ready = GuardedState(0)
    var threads: [RunLoopThread] = []
    for index in 0..<2 {
      let thread = RunLoopThread(name: "loop\(index)") { thread in
        let loop = thread.runLoop
        try loop.add(source, mode: .default)
        let recorder = LoopRecorder()
        loop.addInstrument(recorder)
        ready.withLock { $0 += 1 }
        let result = try loop.run(
          mode: .default, timeout: .seconds(60), returnAfterSourceHandled: true)
        results.withLock { $0.append(result) }
      }
      try thread.start()
      threads.append(thread)
    }
    #expect(eventually { ready.withLock { $0 } == 2 })
    // Each loop performs the source once; keep signalling until both have.
    #expect(
      eventually {
        source.signalAndWakeUp()
        usleep(2000)
        return results.withLock { $0.count } == 2
      })
    for thread in threads { try thread.join() }
    #expect(results.withLock { $0 } == [.handledSource, .handledSource])
  }

  @Test func sourcesInOneLoopRunInAscendingOrderWithTiesInSignalOrder() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder()
      let sources = [("c", 2), ("a", 0), ("b1", 1), ("b2", 1)].map { name, order in
        CustomInputSource(name: name, order: order) { recorder.mark(name) }
      }
      for source in sources.reversed() { try loop.add(source, mode: .default) }
      for source in sources { source.signal() }
      try loop.run(mode: .default, timeout: .zero)
      return recorder.log
    }
    // Added in reverse (b2 went in before b1), signalled b1 first: as in CFRunLoop, equal
    // orders run in the order of their signals, whatever the order they were added in.
    #expect(log == ["a", "b1", "b2", "c"])
  }

  @Test func addingAndRemovingFromAnotherThreadWhileTheLoopRunsIsSafe() throws {
    let performed = try onNewThread { loop -> Int in
      let count = GuardedState(0)
      let keepAlive = CustomInputSource(name: "keep") {}
      try loop.add(keepAlive, mode: .default)
      let changer = RunLoopThread(name: "changer") { _ in
        for _ in 0..<200 {
          let source = CustomInputSource { count.withLock { $0 += 1 } }
          try loop.add(source, mode: .default)
          source.signalAndWakeUp()
          while source.isSignalled { usleep(50) }
          loop.remove(source, mode: .default)
        }
        loop.stop()
      }
      try changer.start()
      let result = try loop.run(mode: .default, timeout: .seconds(60))
      try changer.join()
      #expect(result == .stopped)
      return count.withLock { $0 }
    }
    #expect(performed == 200)
  }

  // A signal made while no instrument wanted call-outs has no recorded time. An instrument
  // attached before its call-out must not be given an earlier signal's time instead. Other
  // tests' instruments may be attached meanwhile, in which case the second signal's time is
  // recorded: either way, no due time from before the second signal.
  @Test func aCalloutIsNeverGivenAnEarlierSignalsTime() throws {
    let (dueAt, secondSignal) = try onNewThread {
      loop -> (ContinuousClock.Instant?, ContinuousClock.Instant) in
      let source = CustomInputSource(name: "job") {}
      try loop.add(source, mode: .default)
      let first = LoopRecorder(.callouts)
      loop.addInstrument(first)
      source.signal()
      try loop.run(mode: .default, timeout: .zero)
      loop.removeInstrument(first)
      let secondSignal = ContinuousClock.now
      source.signal()
      let second = LoopRecorder(.callouts)
      loop.addInstrument(second)
      try loop.run(mode: .default, timeout: .zero)
      loop.removeInstrument(second)
      let firstDue = first.callouts(.source).map(\.dueAt)
      let secondDue = second.callouts(.source).map(\.dueAt)
      #expect(firstDue.count == 1 && firstDue[0] != nil)
      #expect(secondDue.count == 1)
      return (secondDue.first ?? nil, secondSignal)
    }
    if let dueAt { #expect(dueAt >= secondSignal) }
  }
}
