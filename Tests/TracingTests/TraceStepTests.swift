import Glibc
import RunLoopCore
import RunLoopJournal
import RunLoopTestSupport
import RunLoopTimers
import RunLoopTracing
import Testing

@Suite("The step on every trace record")
struct TraceStepTests {
  /// One traced run with a block queued before it, a signalled custom source, a due timer
  /// and a readable pipe, then a sleep until the run's timeout; returns the records.
  private func tracedRun(_ sinks: [any TraceSink], path: String) throws -> [TraceRecord] {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
    defer {
      close(fds[0])
      close(fds[1])
    }
    let (readEnd, writeEnd) = (fds[0], fds[1])
    try onNewThread("steps") { loop in
      let tracer = LoopTracer(sinks: sinks)
      let source = CustomInputSource(name: "source") {}
      try loop.add(source, mode: .default)
      let watch = DescriptorWatch(fileDescriptor: readEnd, name: "pipe") { _ in
        var byte: UInt8 = 0
        _ = read(readEnd, &byte, 1)
      }
      try loop.add(watch, mode: .default)
      let timer = try LoopTimer(fireAt: .now, name: "tick") { _ in }
      try loop.add(timer, mode: .default)
      loop.perform(inModes: [.default], name: "block") {}
      source.signal()
      var byte: UInt8 = 1
      _ = write(writeEnd, &byte, 1)
      tracer.attach(to: loop)
      try loop.run(mode: .default, timeout: .milliseconds(20))
      tracer.close()
    }
    return try TraceLog.read(contentsOf: path)
  }

  /// The step of every record, described: `step activity`, `step callout:name`, `step sleep`.
  private func steps(_ records: [TraceRecord]) -> [String] {
    records.map { record in
      let step = record.step.map(String.init) ?? "-"
      switch record.record {
      case .activity: return "\(step) \(record.activity ?? "?")"
      case .callout: return "\(step) callout:\(record.calloutName ?? "?")"
      case .sleep: return "\(step) sleep"
      case .stall, .recovery, .loss: return "\(step) \(record.record)"
      }
    }
  }

  @Test func eachRecordOfATracedRunCarriesTheStepTheLoopWasAt() throws {
    let path = temporaryPath("steps.jsonl")
    defer { unlink(path) }
    let records = try tracedRun([try JSONLinesSink(path: path)], path: path)
    let described = steps(records)
    // The first pass: the block at 3, the source at 4, the timer and the pipe at 9 (their
    // order inside step 9 is the loop's, not this test's).
    #expect(
      Array(described.prefix(5)) == [
        "1 entry", "2 beforeTimers", "3 beforeSources", "3 callout:block", "4 callout:source",
      ])
    #expect(Set(described[5..<7]) == ["9 callout:tick", "9 callout:pipe"])
    // The second pass sleeps until the timeout, at 7, between 6 and 8.
    #expect(
      Array(described.dropFirst(7)) == [
        "2 beforeTimers", "3 beforeSources", "6 beforeWaiting", "7 sleep", "8 afterWaiting",
        "10 exit",
      ])
    // The JSON line carries the key, in the documented place: just after `depth`.
    let text = try String(contentsOfFile: path, encoding: .utf8)
    let tick = try #require(
      text.split(separator: "\n").first { $0.contains(#""callout_name":"tick""#) })
    #expect(tick.contains(#""depth":1,"step":9,"#))
  }

  @Test(.enabled(if: journaldAvailable, "no journald could be started"))
  func journaldEntriesCarryTheStepAsRunloopStep() throws {
    let identifier = "runloop-steps-\(UInt32.random(in: 0...UInt32.max))"
    let path = temporaryPath("steps-journal.jsonl")
    defer { unlink(path) }
    let journal = try JournalSink(identifier: identifier)
    let records = try tracedRun([try JSONLinesSink(path: path), journal], path: path)
    #expect(records.count == 13)
    var entries: [[String: String]] = []
    #expect(
      eventually(10) {
        entries = (try? journalEntries(["-t", identifier])) ?? []
        return entries.count >= records.count
      })
    #expect(entries.count == records.count)
    let stepBySequence = Dictionary(
      entries.map { ($0["RUNLOOP_SEQ"] ?? "", $0["RUNLOOP_STEP"] ?? "-") }
    ) { first, _ in first }
    for record in records {
      #expect(stepBySequence[String(record.seq)] == record.step.map(String.init))
    }
    let byName = Dictionary(
      entries.compactMap { entry in
        entry["RUNLOOP_CALLOUT_NAME"].map { ($0, entry["RUNLOOP_STEP"]) }
      }
    ) { first, _ in first }
    #expect(byName == ["block": "3", "source": "4", "tick": "9", "pipe": "9"])
  }
}
