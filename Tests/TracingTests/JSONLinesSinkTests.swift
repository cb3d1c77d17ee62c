import Foundation
import RunLoopCore
import RunLoopTestSupport
import RunLoopTracing
import Testing

@Suite("JSON Lines sink delivery")
struct JSONLinesSinkTests {
  static let record = TraceRecord(
    run: "r", seq: 1, record: .activity, timestamp: 1, wallTime: 0, pid: 1, tid: 2,
    thread: "thread", loop: 1, mode: "default", iteration: 1, depth: 1, activity: "entry")

  // A pipe nobody reads yet: close() returns at its timeout instead of hanging, reports
  // that it did not finish, and the writer still delivers every record once the reader
  // comes, then closes the pipe.
  @Test func closeOfASlowSinkNeitherHangsNorLosesRecords() throws {
    let path = temporaryPath("fifo")
    #expect(mkfifo(path, 0o600) == 0)
    defer { unlink(path) }
    let reader = open(path, O_RDONLY | O_NONBLOCK)
    #expect(reader >= 0)
    let sink = try JSONLinesSink(path: path, closeTimeout: .milliseconds(300))
    let total = 20_000
    for _ in 0..<1000 { sink.enqueue(Self.record) }
    usleep(100_000)  // the writer is now blocked writing into the full pipe
    for _ in 1000..<total { sink.enqueue(Self.record) }
    let closed = GuardedState<Bool?>(nil)
    Thread { closed.withLock { $0 = sink.close(timeout: .milliseconds(300)) } }.start()
    // Nobody reads yet: close() must come back by its timeout, saying it did not finish.
    #expect(eventually(5) { closed.withLock { $0 } != nil })
    #expect(closed.withLock { $0 } == false)
    let pending = sink.statistics
    #expect(pending.recordsPending > 0)
    #expect(!pending.closed)
    // Now drain the pipe: every line arrives, then end of file (the writer closed it).
    var buffer = [UInt8](repeating: 0, count: 65536)
    var lines = 0
    var sawEnd = false
    let deadline = ContinuousClock.now + .seconds(20)
    while ContinuousClock.now < deadline {
      let count = read(reader, &buffer, buffer.count)
      if count > 0 {
        lines += buffer[0..<count].filter { $0 == 10 }.count
      } else if count == 0 {
        sawEnd = true
        break
      } else {
        usleep(1000)
      }
    }
    close(reader)
    #expect(sawEnd)
    #expect(lines == total, "\(lines) of \(total) lines reached the pipe")
    #expect(sink.close(timeout: .seconds(5)))
    let final = sink.statistics
    #expect(final.closed)
    #expect(final.recordsWritten == UInt64(total))
    #expect(final.recordsPending == 0)
    #expect(final.recordsLost == 0)
  }

  // write(2) failures are counted, not ignored: /dev/full refuses every write.
  @Test func failedWritesAreCountedAsLostRecords() throws {
    let sink = try JSONLinesSink(path: "/dev/full")
    for _ in 0..<100 { sink.enqueue(Self.record) }
    #expect(sink.flush())
    #expect(sink.close(timeout: .seconds(5)))
    let statistics = sink.statistics
    #expect(statistics.writeErrors >= 1)
    #expect(statistics.lastError == ENOSPC)
    #expect(statistics.recordsLost == 100)
    #expect(statistics.recordsWritten == 0)
  }

  // A pipe whose reader is gone: the writes fail with EPIPE and are counted; the process is
  // not killed by SIGPIPE.
  @Test func writesToAClosedPipeAreCountedNotFatal() throws {
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    Glibc.close(ends[0])
    let sink = try JSONLinesSink(fileDescriptor: ends[1])
    Glibc.close(ends[1])
    for _ in 0..<10 { sink.enqueue(Self.record) }
    #expect(sink.flush())
    #expect(sink.close(timeout: .seconds(5)))
    let statistics = sink.statistics
    #expect(statistics.lastError == EPIPE)
    #expect(statistics.recordsLost == 10)
    #expect(statistics.recordsWritten == 0)
  }

  // Two sinks sharing one pipe (as two tracers sharing standard output would): every
  // write carries whole lines within PIPE_BUF, so no record is split by the other's output.
  @Test func sinksSharingAPipeNeverSplitARecord() throws {
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    let sinks = try (0..<2).map { _ in try JSONLinesSink(fileDescriptor: ends[1]) }
    Glibc.close(ends[1])
    let readEnd = ends[0]
    let perSink = 5_000
    let collected = GuardedState<[UInt8]>([])
    let reading = Thread {
      var buffer = [UInt8](repeating: 0, count: 65536)
      while true {
        let count = read(readEnd, &buffer, buffer.count)
        if count <= 0 { break }
        collected.withLock { $0 += buffer[0..<count] }
      }
    }
    reading.start()
    let producers = (0..<2).map { index in
      Thread {
        var record = Self.record
        record.thread = String(repeating: "x", count: 100 + index * 37)
        for seq in 0..<perSink {
          record.seq = UInt64(seq)
          sinks[index].enqueue(record)
        }
      }
    }
    for producer in producers { producer.start() }
    #expect(eventually { sinks.allSatisfy { $0.statistics.recordsWritten > 0 } })
    usleep(200_000)
    for sink in sinks { #expect(sink.close(timeout: .seconds(10))) }
    #expect(eventually { collected.withLock { $0.filter { $0 == 10 }.count } == perSink * 2 })
    Glibc.close(readEnd)
    let text = String(decoding: collected.withLock { $0 }, as: UTF8.self)
    let lines = text.split(separator: "\n")
    #expect(lines.count == perSink * 2)
    let decoded = try TraceLog.parse(text)
    #expect(decoded.count == perSink * 2)
    for index in 0..<2 {
      let mine = decoded.filter { $0.thread.count == 100 + index * 37 }.map(\.seq)
      #expect(mine == (0..<UInt64(perSink)).map { $0 })
    }
  }
}
