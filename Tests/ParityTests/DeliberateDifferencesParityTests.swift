import CoreFoundation
import Foundation
import RunLoopCore
import Testing

/// Where we differ from CFRunLoop on purpose (Docs: "Where we differ from Core Foundation"):
/// each scenario runs on both sides, and each side's trace is pinned, naming the difference.
@Suite("Parity: deliberate differences")
struct DeliberateDifferencesParityTests {
  /// Difference: `perform` wakes the loop; `CFRunLoopPerformBlock` does not, so CF runs the
  /// block only when something else (here the run's timeout) wakes the loop.
  @Test func performFromAnotherThreadWakesOurLoopButNotCFs() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      let performer = Thread {
        usleep(30_000)
        loop.perform(mode: "default", name: "b") {}
      }
      performer.start()
      loop.run(0.3)
    }
    #expect(
      traces.cf == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "block:b",
        "exit", "result:timedOut",
      ])
    #expect(
      traces.ours == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "block:b",
        "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:timedOut",
      ])
  }

  /// Difference: a NaN timeout is an error here; CFRunLoopRunInMode takes it as "no timeout"
  /// (its comparisons with NaN are all false), so it is not run on CF's side.
  @Test func nanTimeoutIsAnErrorHere() throws {
    let error = Parity.trace(
      of: { loop in
        let ours = loop as! OurParityLoop
        do {
          try ours.loop.run(mode: .default, seconds: .nan)
          loop.mark("ran")
        } catch let error as RunLoopError {
          loop.mark("error:\(error.code)")
        } catch {
          loop.mark("other error")
        }
      }, on: { OurParityLoop() })
    #expect(error == ["error:invalidArgument"])
  }

  /// Difference: `run(until:)` returns `stopped` when stopped; Foundation's
  /// `RunLoop.run(until:)` goes on running until the date.
  @Test func runUntilReturnsWhenStoppedHereButNotInFoundation() {
    let foundation = Parity.trace(
      of: { loop in
        let cf = loop as! CFParityLoop
        let timer = CFRunLoopTimerCreateWithHandler(nil, CFAbsoluteTimeGetCurrent() + 0.02, 0, 0, 0)
        { _ in CFRunLoopStop(cf.loop) }
        CFRunLoopAddTimer(cf.loop, timer, kCFRunLoopDefaultMode)
        let keep = loop.source("keep")
        loop.add(keep, mode: "default")
        let start = loop.now()
        RunLoop.current.run(until: Date(timeIntervalSinceNow: 0.2))
        loop.mark(loop.now() - start >= 0.15 ? "ran until the date" : "returned when stopped")
      }, on: { CFParityLoop() })
    let ours = Parity.trace(
      of: { loop in
        let ours = loop as! OurParityLoop
        loop.add(
          loop.timer("stopper", after: 0.02, every: nil) { _ in loop.stop() }, mode: "default")
        loop.add(loop.source("keep"), mode: "default")
        let start = loop.now()
        let result = try! ours.loop.run(until: .now + .milliseconds(200))
        loop.mark(
          loop.now() - start < 0.15 ? "returned \(result) when stopped" : "ran until the date")
      }, on: { OurParityLoop() })
    #expect(foundation.last == "ran until the date")
    #expect(ours.last == "returned stopped when stopped")
  }
  /// Difference: removing the mode's only item from another thread wakes our loop, whose run
  /// returns `finished` at once; CFRunLoop's wake-up is not made, and its run sleeps on to its
  /// timeout.
  @Test func removingTheOnlyItemFromAnotherThreadEndsOurRunAtOnce() {
    let traces = Parity.run { loop in
      let only = loop.source("only")
      loop.add(only, mode: "default")
      let remover = Thread {
        usleep(30_000)
        loop.remove(only, mode: "default")
      }
      let start = loop.now()
      remover.start()
      loop.run(0.5)
      loop.mark(loop.now() - start < 0.4 ? "before the timeout" : "at the timeout")
    }
    let pass = ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"]
    #expect(traces.cf == pass + ["result:timedOut", "at the timeout"])
    #expect(traces.ours == pass + ["result:finished", "before the timeout"])
  }

  /// Adds a one-shot timer 50 ms out and an observer `o` that invalidates it at the first
  /// `beforeWaiting`, so the loop goes to sleep with the timer gone.
  static func addTimerInvalidatedBeforeItsDate(to loop: any ParityLoop) {
    let timer = loop.timer("t", after: 0.05, every: nil) { _ in }
    loop.add(timer, mode: "default")
    let once = Shared(true)
    let canceller = loop.observer("o", activities: [.beforeWaiting], repeats: true, order: 0) {
      _, _ in if once.first() { loop.invalidate(timer) }
    }
    loop.add(canceller, mode: "default")
  }

  /// Difference (a CF defect on Linux): CF keeps its timerfd armed for a timer invalidated
  /// before its date, so it wakes at that date for nothing and makes an empty pass; ours
  /// disarms, and sleeps on to the timeout.
  @Test func invalidatedTimersDateMakesAnEmptyPassInCFOnly() {
    let traces = Parity.run { loop in
      loop.add(loop.source("keep"), mode: "default")
      Self.addTimerInvalidatedBeforeItsDate(to: loop)
      loop.run(0.3)
    }
    let pass = ["beforeTimers", "beforeSources", "beforeWaiting", "observer:o", "afterWaiting"]
    #expect(traces.cf == ["entry"] + pass + pass + ["exit", "result:timedOut"])
    #expect(traces.ours == ["entry"] + pass + ["exit", "result:timedOut"])
  }

  /// Difference (the same CF defect): when the invalidated timer was the mode's only item, CF
  /// wakes at its date and returns `finished` there, before the timeout; ours has nothing to
  /// wake it and returns `timedOut` at the timeout.
  @Test func invalidatedOnlyTimerEndsCFsRunEarlyAtItsDate() {
    let traces = Parity.run { loop in
      Self.addTimerInvalidatedBeforeItsDate(to: loop)
      let start = loop.now()
      loop.run(0.5)
      loop.mark(loop.now() - start < 0.4 ? "before the timeout" : "at the timeout")
    }
    let pass = ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "observer:o"]
    #expect(traces.cf == pass + ["afterWaiting", "exit", "result:finished", "before the timeout"])
    #expect(traces.ours == pass + ["afterWaiting", "exit", "result:timedOut", "at the timeout"])
  }
}
