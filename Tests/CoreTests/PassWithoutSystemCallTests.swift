import Glibc
import RunLoopCore
import Testing

/// Step 7 of a pass that does not sleep takes the events `epoll` has. A mode that watches
/// no descriptor has none the pass needs (what a wake-up announces, the pass looks at
/// directly), so such a pass makes no `epoll_wait` call, the one system call it would
/// make. Counted with the loop's count of those calls (a sleep that a noted wake-up cuts
/// short is counted in `WakeUpNoteTests`).
@Suite("A pass with nothing for epoll does not call it")
struct PassWithoutSystemCallTests {
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
}
