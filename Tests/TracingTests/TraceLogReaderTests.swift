import Foundation
import RunLoopCore
import RunLoopTestSupport
import RunLoopTracing
import Testing

@Suite("Reading a trace log line by line")
struct TraceLogReaderTests {
  static func line(_ seq: Int) -> String {
    TraceRecord(
      run: "r", seq: UInt64(seq), record: .activity, timestamp: Int64(seq), wallTime: 0, pid: 1,
      tid: 2, thread: "t", loop: 1, mode: "default", iteration: 1, depth: 1, activity: "entry"
    ).jsonLine
  }

  static func readAll(_ reader: TraceLogReader) throws -> [UInt64] {
    var seqs: [UInt64] = []
    while let record = try reader.next() { seqs.append(record.seq) }
    return seqs
  }

  @Test func badBlankAndCutOffLinesAreSkippedAndCounted() throws {
    let text = Self.line(1) + "\n  \n" + "not json\n" + Self.line(2) + #"{"v":1,"ru"#
    let reader = TraceLogReader(bytes: Array(text.utf8))
    #expect(try Self.readAll(reader) == [1, 2])
    #expect(reader.records == 2)
    #expect(reader.badLines == 2)
    #expect(reader.firstBadLine?.line == 4)
    #expect(reader.firstBadLine?.reason == "not JSON")
    #expect(reader.endsWithCutOffLine)
  }

  @Test func aRecordMissingAFieldIsNamed() throws {
    let reader = TraceLogReader(bytes: Array(#"{"v":1,"run":"r"}"#.utf8 + [10]))
    #expect(try reader.next() == nil)
    #expect(reader.firstBadLine?.reason.contains("no \"seq\"") == true)
    #expect(!reader.endsWithCutOffLine)
  }

  // A line longer than the limit is skipped without being kept, and reading goes on.
  @Test func aLineOverTheLimitIsSkippedAndTheNextOneRead() throws {
    let path = temporaryPath("longline.jsonl")
    defer { unlink(path) }
    let long = String(repeating: "x", count: TraceLogReader.maximumLineBytes + 100_000)
    try (Self.line(1) + long + "\n" + Self.line(3)).write(
      toFile: path, atomically: false, encoding: .utf8)
    let reader = try TraceLogReader(path: path)
    #expect(try Self.readAll(reader) == [1, 3])
    #expect(reader.badLines == 1)
    #expect(reader.firstBadLine?.line == 2)
    #expect(reader.firstBadLine?.reason.hasPrefix("longer than") == true)
  }

  @Test func openErrorsCarryTheirOwnErrno() throws {
    #expect(throws: RunLoopError.self) { try TraceLogReader(path: "/nonexistent/x.jsonl") }
    do {
      _ = try TraceLogReader(path: "/")
      Issue.record("a directory opened as a trace")
    } catch {
      #expect(error.systemError == EISDIR)
    }
  }

  // The strict reader keeps rejecting a bad line, naming it.
  @Test func theStrictReadRejectsABadLine() throws {
    let path = temporaryPath("strict.jsonl")
    defer { unlink(path) }
    try (Self.line(1) + "junk\n").write(toFile: path, atomically: false, encoding: .utf8)
    do {
      _ = try TraceLog.read(contentsOf: path)
      Issue.record("a bad line was accepted")
    } catch {
      #expect(error.code == .invalidArgument)
      #expect(error.message.hasPrefix("line 2 of"))
    }
  }
}
