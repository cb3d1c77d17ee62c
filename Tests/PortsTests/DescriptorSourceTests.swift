import CRunLoopLinux
import Glibc
import RunLoopCore
import RunLoopPorts
import Testing

@Suite("Descriptor sources")
struct DescriptorSourceTests {
  @Test func readableCalloutRunsOnTheLoopThreadWithTheData() throws {
    let pipe = TestPipe()
    let seen = GuardedState<(bytes: [UInt8], threads: Set<pid_t>)>(([], []))
    let thread = try startLoopThread("reader") { loop in
      let source = DescriptorSource(
        fileDescriptor: pipe.readEnd, ownership: .owned, name: "pipe",
        onReadable: { source in
          var buffer = [UInt8](repeating: 0, count: 64)
          let count = read(source.fileDescriptor, &buffer, buffer.count)
          let tid = crl_current_tid()
          if count > 0 {
            seen.withLock {
              $0.bytes += buffer[0..<count]
              $0.threads.insert(tid)
            }
          }
        })
      try source.add(to: loop, mode: .default)
    }
    pipe.write([1, 2, 3])
    #expect(eventually { seen.withLock { $0.bytes.count } == 3 })
    pipe.write([4, 5])
    #expect(eventually { seen.withLock { $0.bytes.count } == 5 })
    let result = seen.withLock { $0 }
    #expect(result.bytes == [1, 2, 3, 4, 5])
    #expect(result.threads == [thread.threadID!])
    try finish(thread)
    close(pipe.writeEnd)
  }

  @Test func writableCalloutsComeOnlyWhileAskedFor() throws {
    let pipe = TestPipe()
    let writes = GuardedState(0)
    try onNewThread { loop in
      let source = DescriptorSource(
        fileDescriptor: pipe.writeEnd, ownership: .owned, wantsWritable: true,
        onWritable: { source in
          let count = writes.withLock { count -> Int in
            count += 1
            return count
          }
          if count == 3 { try? source.setWantsWritable(false) }
        })
      try source.add(to: loop, mode: .default)
      #expect(source.wantsWritable)
      try run(loop) { writes.withLock { $0 } >= 3 }
      // More passes: no more writable call-outs once the interest is off.
      for _ in 0..<5 { _ = try loop.run(mode: .default, timeout: .milliseconds(10)) }
      #expect(!source.wantsWritable)
      source.invalidate()
    }
    #expect(writes.withLock { $0 } == 3)
    close(pipe.readEnd)
  }

  @Test func hangupReachesReaderAndErrorCallout() throws {
    let pipe = TestPipe()
    let log = GuardedState<[String]>([])
    pipe.write([9])
    close(pipe.writeEnd)
    try onNewThread { loop in
      let source = DescriptorSource(
        fileDescriptor: pipe.readEnd, ownership: .owned,
        onReadable: { source in
          var byte: UInt8 = 0
          let count = read(source.fileDescriptor, &byte, 1)
          log.withLock { $0.append("read \(count)") }
        },
        onError: { source, events in
          log.withLock { $0.append("error \(events)") }
          source.invalidate()
        })
      try source.add(to: loop, mode: .default)
      try run(loop) { !source.isValid }
      #expect(!isOpen(pipe.readEnd))
    }
    // Data and hang-up arrive together: the reader gets the byte, then the error call-out
    // hears of the hang-up in the same call-out.
    #expect(log.withLock { $0 } == ["read 1", "error hangup"])
  }

  @Test func unhandledHangupInvalidatesTheSourceInsteadOfSpinning() throws {
    let pipe = TestPipe()
    let reads = GuardedState(0)
    close(pipe.writeEnd)
    try onNewThread { loop in
      // The reader ignores end of file and there is no error call-out.
      let source = DescriptorSource(
        fileDescriptor: pipe.readEnd, ownership: .owned,
        onReadable: { _ in reads.withLock { $0 += 1 } })
      try source.add(to: loop, mode: .default)
      for _ in 0..<20 { _ = try loop.run(mode: .default, timeout: .milliseconds(5)) }
      #expect(!source.isValid)
    }
    #expect(reads.withLock { $0 } == 1)
  }

  @Test func invalidateClosesOnlyOwnedDescriptorsAndOnlyOnce() throws {
    let owned = TestPipe()
    let borrowed = TestPipe()
    let ownedSource = DescriptorSource(
      fileDescriptor: owned.readEnd, ownership: .owned, onReadable: { _ in })
    let borrowedSource = DescriptorSource(
      fileDescriptor: borrowed.readEnd, ownership: .borrowed, onReadable: { _ in })
    ownedSource.invalidate()
    borrowedSource.invalidate()
    #expect(!isOpen(owned.readEnd))
    #expect(isOpen(borrowed.readEnd))
    // The number is free again; a second invalidate must not close whoever got it.
    let reused = dup(borrowed.readEnd)
    ownedSource.invalidate()
    #expect(isOpen(reused))
    for fd in [owned.writeEnd, borrowed.readEnd, borrowed.writeEnd, reused] { close(fd) }
  }

  @Test func invalidatedSourceCannotBeAdded() throws {
    let pipe = TestPipe()
    let source = DescriptorSource(fileDescriptor: pipe.readEnd, onReadable: { _ in })
    source.invalidate()
    #expect(throws: RunLoopError.invalidated("")) {
      try source.add(to: EventRunLoop.main, mode: .default)
    }
    close(pipe.readEnd)
    close(pipe.writeEnd)
  }

  @Test func readyDescriptorWaitsForItsModeWithoutSpinning() throws {
    let pipe = TestPipe()
    let reads = GuardedState(0)
    try onNewThread { loop in
      let source = DescriptorSource(
        fileDescriptor: pipe.readEnd, ownership: .owned,
        onReadable: { source in
          var byte: UInt8 = 0
          _ = read(source.fileDescriptor, &byte, 1)
          reads.withLock { $0 += 1 }
        })
      try source.add(to: loop, mode: "tracking")
      let other = CustomInputSource(name: "other") {}
      try loop.add(other, mode: .default)
      pipe.write([1])
      // The default mode runs, the descriptor is ready but not in it: no call-out, and the
      // loop sleeps through the timeout rather than waking on the held descriptor.
      let wakes = LoopRecorder()
      loop.addInstrument(wakes)
      let result = try loop.run(mode: .default, timeout: .milliseconds(50))
      loop.removeInstrument(wakes)
      #expect(result == .timedOut)
      #expect(reads.withLock { $0 } == 0)
      // One wake-up sets the descriptor aside; a spinning loop would wake thousands of times.
      #expect(wakes.wakeUps <= 3)
      let handled = try loop.run(
        mode: "tracking", timeout: .seconds(5), returnAfterSourceHandled: true)
      #expect(handled == .handledSource)
      other.invalidate()
      source.invalidate()
    }
    #expect(reads.withLock { $0 } == 1)
    close(pipe.writeEnd)
  }
}
