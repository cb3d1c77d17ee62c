import Glibc
import RunLoopCore
import Synchronization
import Testing

/// Step 7 on the sleep word: a run that watches no descriptor and has no deadline sleeps on
/// its loop's `futex` instead of in `epoll`, and everything that can announce work to such a
/// run still wakes it. Where the loop sleeps is read from `/proc` (the system call its
/// thread is blocked in), on real threads.
@Suite("Sleeping on the wake word")
struct SleepWordTests {
  @Test func aRunWithNoDescriptorAndNoDeadlineSleepsOnItsWordAndAPerformWakesIt() throws {
    let worker = try startLoopThread(name: "word", runTimeout: nil)
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    #expect(eventually { isSleeping(in: futexSystemCall, thread: loop.threadID) })
    let ran = Atomic<Int>(0)
    for _ in 0..<3 {
      let before = ran.load(ordering: .relaxed)
      loop.perform { ran.add(1, ordering: .relaxed) }
      #expect(eventually { ran.load(ordering: .relaxed) == before + 1 })
      // Back to sleep on the word, not in epoll.
      #expect(eventually { isSleeping(in: futexSystemCall, thread: loop.threadID) })
    }
    #expect(ran.load(ordering: .relaxed) == 3)
  }

  @Test func aRunWithATimeoutSleepsInEpoll() throws {
    let worker = try startLoopThread(name: "timed")
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    #expect(eventually { isSleeping(in: epollWaitSystemCall, thread: loop.threadID) })
  }

  @Test func aRunWhoseModeWatchesADescriptorSleepsInEpoll() throws {
    let pipe = Pipe()
    let worker = try startLoopThread(name: "watching", runTimeout: nil) { loop in
      try loop.add(DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in }, mode: .default)
    }
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    #expect(eventually { isSleeping(in: epollWaitSystemCall, thread: loop.threadID) })
  }

  // The loop chose the word because its mode watched no descriptor; a watch added from
  // another thread while it sleeps there must still be heard, and from then on the loop
  // sleeps in epoll, where the descriptor's readiness reaches it.
  @Test func aWatchAddedFromAnotherThreadWakesALoopSleepingOnItsWord() throws {
    let worker = try startLoopThread(name: "word", runTimeout: nil)
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    #expect(eventually { isSleeping(in: futexSystemCall, thread: loop.threadID) })
    let pipe = Pipe()
    let reads = Atomic<Int>(0)
    let watch = DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in
      while pipe.readByte() { reads.add(1, ordering: .relaxed) }
    }
    try loop.add(watch, mode: .default)
    #expect(eventually { isSleeping(in: epollWaitSystemCall, thread: loop.threadID) })
    pipe.writeByte()
    #expect(eventually { reads.load(ordering: .relaxed) == 1 })
    // The removal wakes the loop too (its mode may have nothing left); the sleep after it is
    // on the word again.
    loop.remove(watch, mode: .default)
    #expect(eventually { isSleeping(in: futexSystemCall, thread: loop.threadID) })
  }

  @Test func aStopFromAnotherThreadEndsARunSleepingOnItsWord() throws {
    let result = GuardedState<RunResult?>(nil)
    let thread = RunLoopThread(name: "stopped") { thread in
      try thread.runLoop.add(CustomInputSource {}, mode: .default)
      let value = try thread.runLoop.run(mode: .default, timeout: nil)
      result.withLock { $0 = value }
    }
    try thread.start()
    let loop = thread.runLoop
    #expect(eventually { isSleeping(in: futexSystemCall, thread: loop.threadID) })
    loop.stop()
    let ended = eventually { result.withLock { $0 } != nil }
    // A lost stop would leave a run with no timeout sleeping for good: ended here through a
    // perform request, it fails the test instead of hanging it.
    if !ended { loop.perform { loop.stop() } }
    try thread.join()
    #expect(ended)
    #expect(result.withLock { $0 } == .stopped)
  }

  // A custom source signalled from another thread the way the guide's custom input source is:
  // signal it, then wake its loop.
  @Test func aSignalledSourceWakesALoopSleepingOnItsWord() throws {
    let performed = Atomic<Int>(0)
    let source = CustomInputSource(name: "signalled") { performed.add(1, ordering: .relaxed) }
    let worker = try startLoopThread(name: "word", runTimeout: nil) { loop in
      try loop.add(source, mode: .default)
    }
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    #expect(eventually { isSleeping(in: futexSystemCall, thread: loop.threadID) })
    source.signal()
    loop.wakeUp()
    #expect(eventually { performed.load(ordering: .relaxed) == 1 })
  }
}
