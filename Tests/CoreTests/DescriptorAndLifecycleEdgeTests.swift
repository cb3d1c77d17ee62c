import Dispatch
import Glibc
import RunLoopCore
import Testing

@Suite("Descriptor and lifecycle edge cases")
struct DescriptorAndLifecycleEdgeTests {
  // epoll reports errors and hang-ups even with an empty interest mask, so a held
  // descriptor must leave the epoll set, or a hung-up one wakes the loop on every pass.
  @Test func hungUpDescriptorHeldInAnotherModeDoesNotSpin() throws {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
    let readEnd = fds[0]
    close(fds[1])  // hang up: the read end reports EPOLLHUP from now on
    defer { close(readEnd) }
    let passes = try onNewThread { loop -> Int in
      let watch = DescriptorWatch(fileDescriptor: readEnd, name: "hup") { _ in }
      try loop.add(watch, mode: "other")
      try loop.add(CustomInputSource {}, mode: .default)
      let recorder = LoopRecorder()
      loop.addInstrument(recorder)
      try loop.run(mode: .default, timeout: .milliseconds(200))
      watch.invalidate()
      return recorder.log.filter { $0 == "beforeTimers" }.count
    }
    #expect(passes <= 2, "the loop made \(passes) passes in 200 ms while idle")
  }

  // An outer pass must not hand out readiness from its buffer that a nested run, started by
  // an earlier call-out of the same pass, has already consumed.
  @Test func outerPassDoesNotDeliverReadinessANestedRunAlreadyConsumed() throws {
    let a = Pipe()
    let b = Pipe()
    let spurious = try onNewThread { loop -> Int in
      let nested = GuardedState(false)
      let spurious = GuardedState(0)
      @Sendable func handle(_ pipe: Pipe) {
        if !pipe.readByte() { spurious.withLock { $0 += 1 } }
        let first = nested.withLock { n -> Bool in
          defer { n = true }
          return !n
        }
        if first { _ = try? loop.run(mode: .default, timeout: .zero) }
      }
      let wa = DescriptorWatch(fileDescriptor: a.readEnd, name: "a") { _ in handle(a) }
      let wb = DescriptorWatch(fileDescriptor: b.readEnd, name: "b") { _ in handle(b) }
      try loop.add(wa, mode: .default)
      try loop.add(wb, mode: .default)
      a.writeByte()
      b.writeByte()
      try loop.run(mode: .default, timeout: .milliseconds(100))
      wa.invalidate()
      wb.invalidate()
      return spurious.withLock { $0 }
    }
    #expect(spurious == 0, "\(spurious) handler call(s) for readiness already consumed")
  }

  // At thread exit every item leaves the loop (as CFRunLoop's finalisation does): sources
  // get their cancel call-outs, and a source whose closure captures the loop no longer keeps
  // the loop, and its three descriptors, alive.
  @Test func exitedThreadsLoopIsReleasedEvenWhenASourceCapturesIt() throws {
    nonisolated(unsafe) weak var weakLoop: EventRunLoop?
    let cancelled = GuardedState(false)
    do {
      let thread = RunLoopThread(name: "leak") { thread in
        let loop = thread.runLoop
        let source = CustomInputSource(cancel: { _, _ in cancelled.withLock { $0 = true } }) {
          loop.stop()
        }
        try loop.add(source, mode: .default)
      }
      try thread.start()
      try thread.join()
      weakLoop = thread.runLoop
    }
    #expect(eventually(2) { weakLoop == nil }, "the exited thread's loop is still alive")
    #expect(cancelled.withLock { $0 }, "cancel call-out never ran")
  }

  @Test func exitedThreadsLoopIsReleasedWithoutCapture() throws {
    nonisolated(unsafe) weak var weakLoop: EventRunLoop?
    do {
      let thread = RunLoopThread(name: "noleak") { thread in
        try thread.runLoop.add(CustomInputSource {}, mode: .default)
      }
      try thread.start()
      try thread.join()
      weakLoop = thread.runLoop
    }
    #expect(eventually(2) { weakLoop == nil })
  }

  // remove(watch, A) racing add(watch, B) on one loop must leave the watch knowing it is
  // registered, so that invalidate() still takes it out.
  @Test func invalidateRemovesAWatchAfterARemoveAddRace() throws {
    let pipe = Pipe()
    let leaked = try onNewThread { loop -> Int in
      var leaked = 0
      for _ in 0..<3000 {
        let watch = DescriptorWatch(fileDescriptor: pipe.readEnd, name: "race") { _ in }
        try loop.add(watch, mode: "A")
        let go = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
          go.wait()
          try? loop.add(watch, mode: "B")
          done.signal()
        }
        go.signal()
        loop.remove(watch, mode: "A")
        done.wait()
        watch.invalidate()
        if loop.contains(watch, mode: "B") {
          leaked += 1
          loop.remove(watch, mode: "B")
        }
      }
      return leaked
    }
    #expect(leaked == 0, "\(leaked) watches stayed registered after invalidate()")
  }

  // A run whose only item is a watch sleeps in epoll; removing or invalidating the watch
  // from another thread empties the mode, and the run must end (`finished`), not sleep on.
  @Test(arguments: [false, true])
  func removingTheLastWatchFromAnotherThreadEndsTheRun(byInvalidating: Bool) throws {
    let pipe = Pipe()
    let watch = DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in }
    let result = GuardedState<RunResult?>(nil)
    let thread = RunLoopThread(name: "only-watch") { thread in
      try thread.runLoop.add(watch, mode: .default)
      let value = try thread.runLoop.run(mode: .default, timeout: nil)
      result.withLock { $0 = value }
    }
    try thread.start()
    let loop = thread.runLoop
    #expect(eventually { isSleeping(in: epollWaitSystemCall, thread: loop.threadID) })
    if byInvalidating {
      watch.invalidate()
    } else {
      loop.remove(watch, mode: .default)
    }
    let ended = eventually { result.withLock { $0 } != nil }
    // A run that slept on would never end by itself: stopped here, it fails the test instead
    // of hanging it.
    if !ended { loop.stop() }
    try thread.join()
    #expect(ended)
    #expect(result.withLock { $0 } == .finished)
  }
}
