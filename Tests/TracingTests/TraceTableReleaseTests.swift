import Foundation
import Glibc
import RunLoopCore
import RunLoopJournal
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// A sink of this package keeps the string table of every tracer that feeds it, to resolve
/// the tracer's compact events. It must let go of a table once the tracer is closed or gone
/// and its events are written: a long-lived sink fed by a tracer per request would otherwise
/// grow without bound.
@Suite("String tables of tracers that end")
struct TraceTableReleaseTests {
  /// A sink of records, as a user would write one.
  final class RecordingSink: TraceSink, Sendable {
    let records = GuardedState<[TraceRecord]>([])
    func enqueue(_ record: TraceRecord) { records.withLock { $0.append(record) } }
    func close() {}
  }

  /// A pipe for a JSON sink whose writer must block: nobody reads it until
  /// ``startReading()``, then a thread reads it to its end.
  final class StalledPipe: @unchecked Sendable {
    let readEnd: Int32
    private(set) var writeEnd: Int32
    private let bytes = GuardedState<[UInt8]>([])
    private let ended = DispatchSemaphore(value: 0)

    init() {
      var ends: [Int32] = [-1, -1]
      precondition(pipe(&ends) == 0)
      readEnd = ends[0]
      writeEnd = ends[1]
    }

    /// Closes the test's write end, once the sink has its own copy: the reader sees the end
    /// of the pipe when the sink's writer closes that copy.
    func closeWriteEnd() {
      Glibc.close(writeEnd)
      writeEnd = -1
    }

    func startReading() {
      Thread { [self] in
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
          let count = read(readEnd, &buffer, buffer.count)
          if count > 0 {
            bytes.withLock { $0 += buffer[0..<count] }
          } else if count == 0 || errno != EINTR {
            break
          }
        }
        ended.signal()
      }.start()
    }

    /// Everything read, once the writer closed its end; `nil` if it did not within 20 s.
    func text() -> String? {
      guard ended.wait(timeout: .now() + 20) == .success else { return nil }
      return bytes.withLock { String(decoding: $0, as: UTF8.self) }
    }

    deinit {
      Glibc.close(readEnd)
      if writeEnd >= 0 { Glibc.close(writeEnd) }
    }
  }

  /// A datagram socket a thread drains, for a journal sink; ``stop()`` ends the thread.
  final class JournalReader: @unchecked Sendable {
    let socket: DatagramSocket
    private let datagrams = GuardedState<[String]>([])
    private let reading = GuardedState(true)

    init(_ name: String) {
      socket = DatagramSocket(path: temporaryPath(name))
    }

    func start() {
      Thread { [self] in
        while reading.withLock({ $0 }) {
          let batch = socket.drain()
          datagrams.withLock { $0 += batch }
          if batch.isEmpty { usleep(200) }
        }
      }.start()
    }

    var count: Int { datagrams.withLock { $0.count } }

    func stop() { reading.withLock { $0 = false } }

    /// The entries received, as field dictionaries (the values here have no newline).
    var entries: [[String: String]] {
      datagrams.withLock { $0 }.map { datagram in
        var fields: [String: String] = [:]
        for line in datagram.split(separator: "\n") {
          guard let equals = line.firstIndex(of: "=") else { continue }
          fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return fields
      }
    }
  }

  /// What one request traced: its run id, thread name, mode and block name all carry `index`.
  struct Request: Hashable {
    let index: Int
    var run: String { "run-\(index)" }
    var thread: String { "req-\(index)" }
    var mode: String { "mode-\(index)" }
    var block: String { "block-\(index)" }
  }

  /// Traces `count` requests against `sink` in rounds of `lanes` at once: each on a fresh
  /// loop thread, with a tracer of its own that is detached and then let go (deinitialised
  /// as its thread exits). After each round, `flush` has the sink write everything queued,
  /// the round's releases included. Returns the most tables the sink held at those moments:
  /// 0 when every ended tracer's table was released, however slow the writer is; without
  /// releases, the number of requests traced so far.
  private func traceShortLivedRequests(
    _ count: Int, lanes: Int, sink: some TraceEventSink, flush: () -> Bool
  ) throws -> Int {
    var peak = 0
    let failures = GuardedState<[String]>([])
    for round in stride(from: 0, to: count, by: lanes) {
      DispatchQueue.concurrentPerform(iterations: min(lanes, count - round)) { lane in
        let request = Request(index: round + lane)
        do {
          try onNewThread(request.thread) { loop in
            let tracer = LoopTracer(sinks: [sink], runID: request.run)
            tracer.attach(to: loop)
            let mode = LoopMode(request.mode)
            _ = loop.perform(inModes: [mode], name: request.block) {}
            try loop.run(mode: mode, timeout: .zero)
            tracer.detach()
          }
        } catch {
          failures.withLock { $0.append("\(request.thread): \(error)") }
        }
      }
      #expect(flush())
      peak = max(peak, sink._registeredTables)
    }
    #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
    return peak
  }

  /// Checks that the records of each request carry that request's strings, numbered 1...n
  /// with no gap and no duplicate (an event resolved against another tracer's table would
  /// show up under that tracer's run, with a seq it already has), all requests alike.
  private func expectEachRequestResolvedWithItsOwnStrings(
    _ records: [(
      run: String, seq: UInt64, thread: String, mode: String, kind: String?,
      name: String?
    )],
    requests: Int
  ) {
    let byRun = Dictionary(grouping: records, by: \.run)
    #expect(Set(byRun.keys) == Set((0..<requests).map { Request(index: $0).run }))
    var sizes: Set<Int> = []
    for index in 0..<requests {
      let request = Request(index: index)
      let own = byRun[request.run] ?? []
      sizes.insert(own.count)
      #expect(own.map(\.seq).sorted() == Array(1...UInt64(max(own.count, 1))))
      #expect(own.allSatisfy { $0.thread == request.thread && $0.mode == request.mode })
      let blocks = own.filter { $0.kind == "block" }
      #expect(blocks.map(\.name) == [request.block], "\(request.run)")
    }
    // The same work for every request: the same records.
    #expect(sizes.count == 1, "records per request: \(sizes.sorted())")
  }

  @Test func jsonSinkFedByHundredsOfShortLivedTracersKeepsOnlyTheirLiveTables() throws {
    let path = temporaryPath("requests.jsonl")
    defer { unlink(path) }
    let sink = try JSONLinesSink(path: path)
    let requests = 300
    let peak = try traceShortLivedRequests(requests, lanes: 3, sink: sink) { sink.flush() }
    #expect(sink.flush())
    // Every tracer is gone and every record written: no table is left. Before, the sink kept
    // all 300.
    #expect(sink._registeredTables == 0)
    // After each round and its flush: none (before, all of the round's and earlier ones).
    #expect(peak == 0, "the sink held \(peak) tables after a round")
    // A table registered now takes a number freed by an earlier tracer.
    let late = sink._register(TraceStrings(runID: "late", processID: getpid()))
    #expect(late < UInt32(requests / 3))
    sink._release(late)
    sink.close()
    #expect(sink._registeredTables == 0)
    let records = try TraceLog.read(contentsOf: path)
    #expect(sink.statistics.recordsWritten == UInt64(records.count))
    expectEachRequestResolvedWithItsOwnStrings(
      records.map { ($0.run, $0.seq, $0.thread, $0.mode, $0.calloutKind, $0.calloutName) },
      requests: requests)
  }

  @Test func journalSinkFedByHundredsOfShortLivedTracersKeepsOnlyTheirLiveTables() throws {
    let reader = JournalReader("requests.sock")
    defer { reader.stop() }
    reader.start()
    let journal = try JournalSink(
      identifier: "runloop-requests", destination: .socket(path: reader.socket.path),
      rateLimit: nil)
    let requests = 200
    let peak = try traceShortLivedRequests(requests, lanes: 2, sink: journal) { journal.flush() }
    #expect(journal.flush())
    #expect(journal._registeredTables == 0)
    #expect(peak == 0, "the sink held \(peak) tables after a round")
    journal.close()
    let statistics = journal.statistics
    #expect(statistics.dropped == 0 && statistics.failed == 0)
    #expect(eventually { reader.count >= Int(statistics.sent) })
    let entries = reader.entries.filter { $0["RUNLOOP_RECORD"] != "drops" }
    #expect(entries.count == Int(statistics.sent))
    expectEachRequestResolvedWithItsOwnStrings(
      entries.map {
        (
          $0["RUNLOOP_RUN"] ?? "", UInt64($0["RUNLOOP_SEQ"] ?? "") ?? 0, $0["RUNLOOP_THREAD"] ?? "",
          $0["RUNLOOP_MODE"] ?? "", $0["RUNLOOP_CALLOUT_KIND"], $0["RUNLOOP_CALLOUT_NAME"]
        )
      }, requests: requests)
  }

  /// Traces `blocks` named perform blocks on a fresh thread called `thread`.
  private func traceBlocks(_ blocks: Int, thread: String, tracer: LoopTracer) throws {
    try onNewThread(thread) { loop in
      tracer.attach(to: loop)
      for index in 0..<blocks {
        _ = loop.perform(inModes: [.default], name: "\(thread)-\(index)") {}
      }
      try loop.run(mode: .default, timeout: .zero)
      tracer.detach()
    }
  }

  @Test func tracerClosedWithItsRecordsStillQueuedHasThemAllWrittenThenItsTableReleased()
    throws
  {
    let pipe = StalledPipe()
    let sink = try JSONLinesSink(fileDescriptor: pipe.writeEnd, closeTimeout: .milliseconds(100))
    pipe.closeWriteEnd()  // the sink writes to its own copy
    let tracer = LoopTracer(sinks: [sink], runID: "stalled")
    // About 600 KB of lines: far more than the pipe holds, so the writer blocks.
    let blocks = 2000
    try traceBlocks(blocks, thread: "stalled", tracer: tracer)
    tracer.close()  // queues the release behind the records, then times out closing the sink
    #expect(sink.statistics.recordsPending > 0)
    #expect(!sink.statistics.closed)
    // The records are still queued: their table must stay, and its number must not be given
    // to another table meanwhile (the tracer's is 0, the sink's first).
    #expect(sink._registeredTables == 1)
    let other = sink._register(TraceStrings(runID: "other", processID: getpid()))
    #expect(other == 1)
    sink._release(other)
    pipe.startReading()
    let text = try #require(pipe.text())
    // The writer closed the pipe after its last batch, the release among it; it marks itself
    // finished just after.
    #expect(sink._registeredTables == 0)
    #expect(sink.close(timeout: .seconds(10)))
    let records = try TraceLog.parse(text)
    #expect(sink.statistics.recordsWritten == UInt64(records.count))
    #expect(records.map(\.seq) == Array(1...UInt64(records.count)))
    #expect(records.allSatisfy { $0.run == "stalled" && $0.thread == "stalled" })
    let names = records.filter { $0.calloutKind == "block" }.compactMap(\.calloutName)
    #expect(names == (0..<blocks).map { "stalled-\($0)" })
  }

  @Test func tracerLetGoWithoutCloseReleasesItsTableAfterItsRecordsAndTheNumberIsReused()
    throws
  {
    let pipe = StalledPipe()
    let sink = try JSONLinesSink(fileDescriptor: pipe.writeEnd)
    pipe.closeWriteEnd()
    weak var first: LoopTracer?
    do {
      let tracer = LoopTracer(sinks: [sink], runID: "first")
      first = tracer
      try traceBlocks(2000, thread: "first", tracer: tracer)
    }
    // Detached, its thread gone, its last reference dropped: deinitialised, never closed.
    #expect(first == nil)
    // Its records are still queued behind the blocked writer: its table stays.
    #expect(sink.statistics.recordsPending > 0)
    #expect(sink._registeredTables == 1)
    // A tracer made now gets a number of its own, and its records follow the first's.
    var second: LoopTracer? = LoopTracer(sinks: [sink], runID: "second")
    #expect(sink._registeredTables == 2)
    try traceBlocks(10, thread: "second", tracer: second!)
    pipe.startReading()
    #expect(sink.flush())
    #expect(sink._registeredTables == 1)  // the second tracer's, alive
    second = nil
    #expect(sink.flush())
    #expect(sink._registeredTables == 0)
    // A third tracer reuses a freed number: its records must show its strings, not those
    // the number stood for before.
    do {
      let third = LoopTracer(sinks: [sink], runID: "third")
      #expect(sink._registeredTables == 1)
      try traceBlocks(10, thread: "third", tracer: third)
    }
    #expect(sink.flush())
    #expect(sink._registeredTables == 0)
    sink.close()
    let records = try TraceLog.parse(try #require(pipe.text()))
    #expect(sink.statistics.recordsWritten == UInt64(records.count))
    let byRun = Dictionary(grouping: records, by: \.run)
    #expect(Set(byRun.keys) == ["first", "second", "third"])
    for (run, own) in byRun {
      #expect(own.map(\.seq) == Array(1...UInt64(own.count)), "\(run)")
      #expect(own.allSatisfy { $0.thread == run }, "\(run)")
      let names = own.filter { $0.calloutKind == "block" }.compactMap(\.calloutName)
      let expected = run == "first" ? 2000 : 10
      #expect(names == (0..<expected).map { "\(run)-\($0)" }, "\(run)")
    }
  }

  /// The journal sink's queue is bounded and drops records when full; the release of a
  /// tracer's table must not be dropped with them, or the table would stay for ever.
  @Test func journalSinkReleasesTheTableOfATracerWhoseRecordsOverflowedItsQueue() throws {
    let reader = JournalReader("overflow.sock")
    defer { reader.stop() }
    let journal = try JournalSink(
      identifier: "runloop-overflow", destination: .socket(path: reader.socket.path),
      capacity: 8, rateLimit: nil)
    do {
      let tracer = LoopTracer(sinks: [journal], runID: "overflow")
      try traceBlocks(200, thread: "overflow", tracer: tracer)
    }
    // Nobody reads the socket: the writer is blocked, the queue full, records dropped.
    #expect(journal.statistics.dropped > 0)
    #expect(journal._registeredTables == 1)
    reader.start()
    #expect(journal.flush())
    #expect(journal._registeredTables == 0)
    journal.close()
    let sent = Int(journal.statistics.sent)
    #expect(eventually { reader.count >= sent })
    let entries = reader.entries.filter { $0["RUNLOOP_RECORD"] != "drops" }
    #expect(!entries.isEmpty)
    #expect(
      entries.allSatisfy { $0["RUNLOOP_RUN"] == "overflow" && $0["RUNLOOP_THREAD"] == "overflow" })
  }

  /// A loop that has not yet seen the detach may still call a closed tracer: the call must
  /// record nothing (its table may be gone from the sinks, its number given to another).
  @Test func closedTracerRecordsNothingMore() throws {
    let path = temporaryPath("closed.jsonl")
    defer { unlink(path) }
    let sink = try JSONLinesSink(path: path)
    let recording = RecordingSink()
    let tracer = LoopTracer(sinks: [sink, recording], runID: "closed")
    try traceBlocks(3, thread: "closed", tracer: tracer)
    tracer.close()
    let before = recording.records.withLock { $0.count }
    #expect(before > 0)
    try onNewThread("late") { loop in
      let info = LoopPassInfo(loopID: 1, mode: .default, iteration: 1, depth: 1)
      tracer.runLoop(loop, didReach: .entry, info)
      tracer.runLoop(
        loop, didCallOut: CalloutRecord(kind: .block, name: "late", start: .now, end: .now),
        info)
      tracer.runLoop(loop, didSleepFrom: .now, to: .now, info)
    }
    #expect(recording.records.withLock { $0.count } == before)
    #expect(sink._registeredTables == 0)
    let records = try TraceLog.read(contentsOf: path)
    #expect(records.count == before)
    #expect(!records.contains { $0.thread == "late" || $0.calloutName == "late" })
  }

  /// The writer releases a table where the release item is, after the events before it; a
  /// number given again must then resolve to the new table, in the JSON encoder (which keeps
  /// its quoted strings between batches) and in the records resolver alike.
  @Test func releasedNumberResolvesToTheTableRegisteredAfterIt() throws {
    let sources = TraceSources()
    func events(of strings: TraceStrings, source: UInt32, name: String) -> [TraceEvent] {
      var event = TraceEvent(
        kind: .callout, seq: 0, timestamp: 10, wallTime: 20, loop: 1, iteration: 1, depth: 1,
        tid: 7, thread: TraceEvent.none, mode: TraceEvent.none)
      event.source = source
      var result: [TraceEvent] = []
      for mode in ["a", "b"] {
        #expect(strings.stamp(&event, mode: mode, calloutKind: "block", calloutName: name))
        result.append(event)
      }
      return result
    }
    let first = TraceStrings(runID: "first", processID: 1)
    let number = sources.register(first)
    let firstEvents = events(of: first, source: number, name: "one")
    let firstRecords = firstEvents.map { first.snapshot().record(for: $0) }
    var encoder = JSONEventEncoder(sources: sources)
    let firstLines = encoder.lines(firstEvents.map { .event($0) } + [.release(number)])
    #expect(firstLines == firstRecords.map(\.jsonLine).joined())
    #expect(sources.count == 0)
    // The number comes back for the next table, whose strings have the same ids.
    let second = TraceStrings(runID: "second", processID: 2)
    #expect(sources.register(second) == number)
    let secondEvents = events(of: second, source: number, name: "two")
    let secondRecords = secondEvents.map { second.snapshot().record(for: $0) }
    #expect(encoder.lines(secondEvents) == secondRecords.map(\.jsonLine).joined())
    // The resolver (the journal sink's path), across a release within one batch.
    let third = TraceStrings(runID: "third", processID: 3)
    let resolved = sources.records(
      secondEvents.map { .event($0) } + [.release(number), .record(firstRecords[0])])
    #expect(resolved == secondRecords + [firstRecords[0]])
    #expect(sources.register(third) == number)
    let thirdEvents = events(of: third, source: number, name: "three")
    #expect(sources.records(thirdEvents.map { .event($0) }).map(\.run) == ["third", "third"])
    // A table registered twice keeps its number until its second release.
    #expect(sources.register(third) == number)
    sources.release(number)
    #expect(sources.count == 1)
    sources.release(number)
    #expect(sources.count == 0)
    // An event of a released number, which the ordering rules out, is left out, not a crash.
    #expect(sources.records(thirdEvents.map { .event($0) }).isEmpty)
  }

  /// A sink's release item goes past the queue's bound and while the sink is closing, is
  /// not counted as a record, and is refused only once the writer has finished.
  @Test func writerTakesControlItemsPastItsCapacityAndWhileClosing() throws {
    let entered = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    let seen = GuardedState<[Int]>([])
    let writer = WriterThread<Int>(name: "control", capacity: 2) { batch in
      if batch.contains(0) {
        entered.signal()
        gate.wait()
      }
      seen.withLock { $0 += batch }
    }
    writer.start()
    #expect(writer.enqueue(0))
    // The writer now holds 0 and waits at the gate.
    #expect(entered.wait(timeout: .now() + 10) == .success)
    #expect(writer.enqueue(1) && writer.enqueue(2))
    #expect(!writer.enqueue(3))  // full: dropped
    #expect(writer.enqueueControl(-1))  // past the bound
    #expect(writer.pending == 3 && writer.dropped == 1 && writer.highWater == 2)
    let closed = GuardedState<Bool?>(nil)
    Thread { closed.withLock { $0 = writer.close(timeout: .seconds(10)) } }.start()
    #expect(eventually { !writer.enqueue(4) })  // closing: records refused
    #expect(writer.enqueueControl(-2))  // but not control items
    gate.signal()
    #expect(eventually { closed.withLock { $0 } == true })
    #expect(!writer.enqueueControl(-3))  // finished: the caller does it itself
    #expect(seen.withLock { $0 } == [0, 1, 2, -1, -2])
    #expect(writer.pending == 0)
  }
}
