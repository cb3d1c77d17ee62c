import Foundation
import RunLoopCore
import RunLoopObservers
import RunLoopTestSupport
import Testing

@Suite("Observers across loops and thread exit", .serialized)
struct ObserverLifetimeTests {
  // Re-entrancy is tracked per loop: while loop A is inside the observer's call-out, loop B
  // (another thread) still calls the same observer.
  @Test func observerInTwoLoopsIsNotSkippedOnOneWhileTheOtherCallsIt() throws {
    let onB = GuardedState(0)
    let inA = DispatchSemaphore(value: 0)
    let releaseA = DispatchSemaphore(value: 0)
    let loopB = GuardedState<UInt64>(0)
    let observer = LoopObserver(activities: .beforeTimers) { _, _ in
      if EventRunLoop.current.id == loopB.withLock({ $0 }) {
        onB.withLock { $0 += 1 }
      } else {
        inA.signal()
        releaseA.wait()
      }
    }
    let a = RunLoopThread(name: "loopA") { thread in
      try thread.runLoop.add(CustomInputSource(name: "keep") {}, mode: .default)
      thread.runLoop.add(observer, mode: .default)
      try thread.runLoop.run(mode: .default, timeout: .zero)
    }
    try a.start()
    inA.wait()
    try onNewThread("loopB") { loop in
      loopB.withLock { $0 = loop.id }
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      loop.add(observer, mode: .default)
      try loop.run(mode: .default, timeout: .zero)
    }
    releaseA.signal()
    try a.join()
    #expect(onB.withLock { $0 } == 1)
  }

  // A one-shot observer in two loops that reach the activity at the same time is called
  // once in all: the first loop to claim it is the only one to call it.
  @Test func oneShotObserverInTwoLoopsIsCalledOnceInAll() throws {
    let calls = GuardedState(0)
    let observer = LoopObserver(activities: .beforeTimers, repeats: false) { _, _ in
      calls.withLock { $0 += 1 }
      usleep(20_000)  // long enough for the other loop to reach the activity meanwhile
    }
    let start = DispatchSemaphore(value: 0)
    let threads = try (0..<2).map { index in
      let thread = RunLoopThread(name: "oneshot-\(index)") { thread in
        try thread.runLoop.add(CustomInputSource(name: "keep") {}, mode: .default)
        thread.runLoop.add(observer, mode: .default)
        start.wait()
        for _ in 0..<5 { try thread.runLoop.run(mode: .default, timeout: .zero) }
      }
      try thread.start()
      return thread
    }
    start.signal()
    start.signal()
    for thread in threads { try thread.join() }
    #expect(calls.withLock { $0 } == 1)
    #expect(!observer.isValid)
  }

  // When a thread exits, its loop forgets its observers: the observer, and whatever its
  // closure captured, are released.
  @Test func observerOfAnExitedThreadsLoopIsReleased() throws {
    final class Payload: Sendable {}
    weak var weakObserver: LoopObserver?
    weak var weakPayload: Payload?
    do {
      let payload = Payload()
      weakPayload = payload
      let observer = LoopObserver(activities: .entry) { _, _ in _ = payload }
      weakObserver = observer
      try onNewThread("short-lived") { loop in
        try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
        loop.add(observer, mode: .default)
        try loop.run(mode: .default, timeout: .zero)
      }
    }
    #expect(eventually(2) { weakObserver == nil && weakPayload == nil })
  }

  // An observer that outlives the thread is no longer in the exited loop, and adding it
  // there again does nothing.
  @Test func exitedLoopNoLongerContainsItsObservers() throws {
    let observer = LoopObserver(activities: .entry) { _, _ in }
    let loop = try onNewThread("gone") { loop -> EventRunLoop in
      loop.add(observer, mode: .default)
      #expect(loop.contains(observer, mode: .default))
      return loop
    }
    #expect(eventually(2) { loop.threadHasExited })
    #expect(!loop.contains(observer, mode: .default))
    loop.add(observer, mode: .default)
    #expect(!loop.contains(observer, mode: .default))
    #expect(observer.isValid)
  }
}
