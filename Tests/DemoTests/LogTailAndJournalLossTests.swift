import Foundation
import RunLoopCore
import RunLoopTracing
import Testing

@testable import RunLoopDemo

/// `top` reads a log as the trace tools do (a line that is not a record is skipped and
/// counted, not fatal), and the demo's journal counts what a loop without a sink lost.
@Suite("Log tail and journal losses")
struct LogTailAndJournalLossTests {
  private func record(loop: UInt64, seq: UInt64) -> TraceRecord {
    TraceRecord(
      run: "r1", seq: seq, record: .activity, timestamp: 10, wallTime: 0, pid: 1, tid: 1,
      thread: "main", loop: loop, mode: "default", iteration: 0, depth: 1, activity: "entry")
  }

  @Test func topSkipsAndCountsALineThatIsNotARecord() throws {
    let directory = try scratchDirectory("top-bad-line")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = directory + "/t.jsonl"
    // Any real log will do: a scenario whose claims are about order, not timing, so that a
    // loaded machine cannot fail it (timers-overrun's claims failed under a parallel
    // ThreadSanitizer run).
    #expect(try runDemo(["scenario", "performs", "--json-log", log]).status == 0)
    var lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
    let records = lines.count
    lines.insert("{\"this is\": not json", at: 3)
    try (lines.joined(separator: "\n") + "\n").write(toFile: log, atomically: true, encoding: .utf8)
    let result = try runDemo(["top", log, "--once"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("\(records) records"))
    #expect(result.stdout.contains("1 bad line skipped"))
    #expect(result.stderr.contains("skipped 1 line that is not a trace record (line 4: not JSON)"))
  }

  @Test func topOnceOnAFileWithNoRecordSaysItIsNotALogAndFails() throws {
    let directory = try scratchDirectory("top-no-record")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/notes.txt"
    try "first note\nsecond note\n".write(toFile: path, atomically: true, encoding: .utf8)
    let result = try runDemo(["top", path, "--once"])
    #expect(result.status != 0)
    #expect(
      result.stderr.contains("is not a runloop JSON log: skipped 2 lines"), "\(result.stderr)")
    #expect(result.stdout.isEmpty)
  }

  @Test func theTailHandsOverCompleteLinesOnlyAndCountsBadOnesAcrossReads() throws {
    let directory = try scratchDirectory("tail")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/t.jsonl"
    let encoder = JSONEncoder()
    func line(_ seq: UInt64) throws -> String {
      String(decoding: try encoder.encode(record(loop: 1, seq: seq)), as: UTF8.self)
    }
    var tail = LogTail(path: path)
    var seen: [UInt64] = []
    // Not there yet: nothing, no error.
    try tail.readNewRecords { seen.append($0.seq) }
    #expect(seen.isEmpty)
    let first = try line(1) + "\n" + "garbage\n" + line(2)
    try first.write(toFile: path, atomically: false, encoding: .utf8)
    try tail.readNewRecords { seen.append($0.seq) }
    // The last line has no newline yet: it waits.
    #expect(seen == [1])
    #expect(tail.badLines == 1)
    let handle = try #require(FileHandle(forWritingAtPath: path))
    handle.seekToEndOfFile()
    handle.write(Data(("\n" + "{\"seq\": 3}\n" + (try line(4)) + "\n").utf8))
    try handle.close()
    try tail.readNewRecords { seen.append($0.seq) }
    #expect(seen == [1, 2, 4])
    #expect(tail.badLines == 2)
    #expect(tail.firstBadLine?.line == 2)
    let note = tail.badLineNote ?? ""
    #expect(note.hasPrefix("skipped 2 lines that are not trace records (the first, line 2"))
  }

  @Test func recordsOfALoopWhoseJournalSinkCannotBeMadeAreCountedAsLost() throws {
    let journal = PerLoopJournal(
      identifier: "test", destination: .socket(path: "/nonexistent/journal")
    ) { _, _ throws(RunLoopError) in
      throw RunLoopError.invalidArgument("no sink for this test")
    }
    for seq: UInt64 in 1...3 { journal.enqueue(record(loop: 7, seq: seq)) }
    journal.enqueue(record(loop: 8, seq: 4))
    #expect(journal.drops(ofLoop: 7) == 3)
    #expect(journal.drops(ofLoop: 8) == 1)
    let failure = try #require(journal.sinkFailure)
    #expect(failure.loops == 2 && failure.entries == 4)
    #expect(failure.message.contains("no sink for this test"))
    // Said once, under its own cause: not again among the entries sinks dropped or failed.
    #expect(journal.droppedOrFailed == 0)
    // A close with entries lost is not reported as complete.
    #expect(!journal.close(before: .now + .seconds(1)))
  }
}
