import Dispatch
import Glibc
import RunLoopCore
import RunLoopTimers
import Testing

/// Every test that counts a loop's system calls. Step 7 of a pass that does not sleep takes
/// the events `epoll` has; a mode that watches no descriptor has none the pass needs (what a
/// wake-up announces, the pass looks at directly), so such a pass makes no `epoll_wait`
/// call, the one system call it would make. A wake-up made while the loop is in a pass notes
/// itself in the waker's state, and the pass's sleep takes the note instead of blocking: no
/// `write` by the waking thread, no `epoll_wait` by the loop. Counted with the loop's count
/// of its `epoll_wait` calls and the kernel's count of a thread's `write` calls
/// (`/proc/thread-self/io`).
@Suite("The system calls a pass makes")
struct SystemCallCountTests {
  @Test func zeroTimeoutRunsOfAModeWithoutDescriptorsMakeNoEpollWaitAndStillRunSources() throws {
    let (waits, performed) = try onNewThread { loop -> (UInt64, Int) in
      let performed = GuardedState(0)
      let source = CustomInputSource(name: "counted") { performed.withLock { $0 += 1 } }
      try loop.add(source, mode: .default)
      let before = loop.epollWaits
      for round in 0..<100 {
        if round % 2 == 0 { source.signal() }
        _ = try loop.run(mode: .default, timeout: .zero)
      }
      return (loop.epollWaits - before, performed.withLock { $0 })
    }
    #expect(waits == 0)
    #expect(performed == 50)
  }

  @Test func zeroTimeoutRunsOfAModeWatchingADescriptorPollOncePerPass() throws {
    let pipe = Pipe()
    let (waits, reads) = try onNewThread { loop -> (UInt64, Int) in
      let reads = GuardedState(0)
      try loop.add(
        DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in
          var byte: UInt8 = 0
          _ = read(pipe.readEnd, &byte, 1)
          reads.withLock { $0 += 1 }
        }, mode: .default)
      let before = loop.epollWaits
      for round in 0..<10 {
        if round % 2 == 0 {
          var byte: UInt8 = 1
          _ = write(pipe.writeEnd, &byte, 1)
        }
        _ = try loop.run(mode: .default, timeout: .zero)
      }
      return (loop.epollWaits - before, reads.withLock { $0 })
    }
    // A zero-timeout run skips step 5 and takes the events there are in step 7: one call.
    #expect(waits == 10)
    #expect(reads == 5)
  }

  // A run that returns after a handled source, in a mode without descriptors, with a long
  // timeout: the pass that runs the source does not sleep, and takes no events either.
  @Test func aPassThatHandledASourceInAModeWithoutDescriptorsMakesNoEpollWait() throws {
    let (waits, result) = try onNewThread { loop -> (UInt64, RunResult) in
      let source = CustomInputSource(name: "ready") {}
      try loop.add(source, mode: .default)
      source.signal()
      let before = loop.epollWaits
      let result = try loop.run(
        mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
      return (loop.epollWaits - before, result)
    }
    #expect(result == .handledSource)
    #expect(waits == 0)
  }

  // The request's wake-up finds no run and is dropped; the pass finds the request anyway.
  @Test func aRequestQueuedFromAnotherThreadRunsInTheNextZeroTimeoutPassWithNoEpollWait()
    throws
  {
    let (ran, waits) = try onNewThread { loop -> (Int, UInt64) in
      let ran = GuardedState(0)
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      let other = RunLoopThread(name: "performer") { _ in
        loop.perform { ran.withLock { $0 += 1 } }
      }
      try other.start()
      try other.join()
      let before = loop.epollWaits
      _ = try loop.run(mode: .default, timeout: .zero)
      return (ran.withLock { $0 }, loop.epollWaits - before)
    }
    #expect(ran == 1)
    #expect(waits == 0)
  }

  /// A loop with one idle source whose first `beforeWaiting` wakes the loop (counting the
  /// writes that makes) and whose second stops it; returns the activities, the result and
  /// the writes and the loop's `epoll_wait` calls. A watchdog stops the loop after 10 s, so
  /// a sleep that blocked through the wake-up shows as a wrong log, not as a hang.
  private func runWakingInBeforeWaiting(timeout: Duration?) throws -> (
    log: [String], writes: UInt64?, epollWaits: UInt64
  ) {
    let finished = DispatchSemaphore(value: 0)
    let owner = GuardedState<EventRunLoop?>(nil)
    let watchdog = RunLoopThread(name: "watchdog") { _ in
      if finished.wait(timeout: .now() + .seconds(10)) == .timedOut {
        owner.withLock { $0 }?.stop()
      }
    }
    try watchdog.start()
    defer { try? watchdog.join() }
    return try onNewThread { loop -> ([String], UInt64?, UInt64) in
      defer { finished.signal() }
      owner.withLock { $0 = loop }
      let recorder = LoopRecorder()
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      loop.addInstrument(recorder)
      let writes = GuardedState<UInt64?>(nil)
      loop.addInstrument(
        CoreFoundationFidelityTests.Hook.beforeWaiting(
          first: {
            let before = writeSystemCallsOfThisThread()
            loop.wakeUp()
            let after = writeSystemCallsOfThisThread()
            writes.withLock { $0 = before.flatMap { before in after.map { $0 - before } } }
          },
          later: loop.stop))  // a wake-up too, made during the pass
      let waitsBefore = loop.epollWaits
      let result = try loop.run(mode: .default, timeout: timeout)
      recorder.mark("result:\(result)")
      return (recorder.log, writes.withLock { $0 }, loop.epollWaits - waitsBefore)
    }
  }

  // With a timeout the sleep would be in `epoll`; with none, on the loop's word. Either way
  // the wake-up made in `beforeWaiting` writes nothing, and the sleep after it does not
  // block and, the mode watching no descriptor, makes no `epoll_wait` call: the second pass
  // follows at once, and its stop ends the run.
  @Test(
    .enabled(if: writeSystemCallsOfThisThread() != nil, "needs /proc/thread-self/io"),
    arguments: [Duration.seconds(60), nil])
  func aWakeUpDuringAPassWritesNothingAndTheNextSleepNeitherBlocksNorCallsEpoll(timeout: Duration?)
    throws
  {
    let (log, writes, epollWaits) = try runWakingInBeforeWaiting(timeout: timeout)
    #expect(writes == 0)
    #expect(epollWaits == 0)
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
        "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:stopped",
      ])
  }

  // Due timers are fired from the clock, not from the timerfd's event: a zero-timeout pass
  // of a mode that watches no descriptor fires them without an epoll_wait.
  @Test func aDueTimerFiresInAZeroTimeoutRunWithNoEpollWait() throws {
    let (fired, waits) = try onNewThread { loop -> (Int, UInt64) in
      let fired = GuardedState(0)
      let timer = try LoopTimer(fireAt: .now) { _ in fired.withLock { $0 += 1 } }
      try loop.add(timer, mode: .default)
      let before = loop.epollWaits
      try loop.run(mode: .default, timeout: .zero)
      return (fired.withLock { $0 }, loop.epollWaits - before)
    }
    #expect(fired == 1)
    #expect(waits == 0)
  }
}
