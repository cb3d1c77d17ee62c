import Foundation
import RunLoopCore
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// What the JSON Lines sink does when others touch its file: a truncation (logrotate's
/// `copytruncate`, `truncate -s 0`), a rename followed by a reopen, another writer, a second
/// sink on the same path.
@Suite("JSON Lines sink rotation and sharing")
struct JSONLinesSinkRotationTests {
  static func record(_ seq: Int) -> TraceRecord {
    TraceRecord(
      run: "rotation", seq: UInt64(seq), record: .activity, timestamp: Int64(seq), wallTime: 0,
      pid: 1, tid: 2, thread: "t", loop: 1, mode: "default", iteration: UInt64(seq), depth: 1,
      activity: "beforeTimers")
  }

  static func scratch(_ name: String) -> String {
    NSTemporaryDirectory()
      + "sink-rotation-\(getpid())-\(name)-\(UInt32.random(in: 0...UInt32.max)).jsonl"
  }

  /// Runs `executable` with `arguments` to its end; returns its exit status.
  static func run(_ executable: String, _ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
  }

  @Test func aTruncationMidRunLeavesNoNULBytesAndIsCountedWithTheRecordsItTook() throws {
    let path = Self.scratch("truncate")
    defer { unlink(path) }
    let sink = try JSONLinesSink(path: path)
    for seq in 1...100 { sink.enqueue(Self.record(seq)) }
    #expect(sink.flush())
    #expect(try Self.run("/usr/bin/truncate", ["-s", "0", path]) == 0)
    for seq in 101...150 { sink.enqueue(Self.record(seq)) }
    #expect(sink.close(timeout: .seconds(5)))

    let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    #expect(!bytes.contains(0), "the writes after the truncation left a hole of NUL bytes")
    // The first line after the truncation says what it took.
    let records = try TraceLog.read(contentsOf: path)
    #expect(records.map(\.seq) == [0] + (101...150).map { UInt64($0) })
    #expect(records.first?.record == .loss)
    #expect(records.first?.lost == 100)
    let statistics = sink.statistics
    #expect(statistics.lossRecords == 1)
    #expect(statistics.truncations == 1)
    #expect(statistics.recordsTruncated == 100)
    #expect(statistics.recordsWritten == 150)
    #expect(!statistics.isComplete)
  }

  @Test func aTruncationAfterTheLastWriteIsFoundAtClose() throws {
    let path = Self.scratch("truncate-late")
    defer { unlink(path) }
    let sink = try JSONLinesSink(path: path)
    for seq in 1...10 { sink.enqueue(Self.record(seq)) }
    #expect(sink.flush())
    #expect(try Self.run("/usr/bin/truncate", ["-s", "0", path]) == 0)
    #expect(sink.close(timeout: .seconds(5)))
    #expect(sink.statistics.truncations == 1)
    #expect(sink.statistics.recordsTruncated == 10)
    // The close writes the loss record: the file says what the truncation took.
    let records = try TraceLog.read(contentsOf: path)
    #expect(records.map { "\($0.record) \($0.lost ?? 0)" } == ["loss 10"])
    #expect(!sink.statistics.isComplete)
  }

  @Test func anotherWritersLinesAreCountedAndTheLogIsNotCalledComplete() throws {
    let path = Self.scratch("foreign")
    defer { unlink(path) }
    let sink = try JSONLinesSink(path: path)
    for seq in 1...10 { sink.enqueue(Self.record(seq)) }
    #expect(sink.flush())
    let line = "{\"not\":\"ours\"}"
    #expect(try Self.run("/bin/sh", ["-c", "echo '\(line)' >> '\(path)'"]) == 0)
    for seq in 11...20 { sink.enqueue(Self.record(seq)) }
    #expect(sink.close(timeout: .seconds(5)))
    let statistics = sink.statistics
    #expect(statistics.foreignBytes == UInt64(line.utf8.count + 1))
    #expect(statistics.recordsWritten == 20)
    #expect(!statistics.isComplete)
    // Whole lines: ours and theirs each on lines of their own.
    let text = try String(contentsOfFile: path, encoding: .utf8)
    #expect(text.split(separator: "\n").count == 21)
  }

  @Test func aSecondSinkOnTheSamePathIsRefusedNamingTheHolder() throws {
    let path = Self.scratch("shared")
    defer { unlink(path) }
    let first = try JSONLinesSink(path: path)
    for seq in 1...5 { first.enqueue(Self.record(seq)) }
    #expect(first.flush())
    #expect {
      _ = try JSONLinesSink(path: path)
    } throws: { error in
      guard let error = error as? RunLoopError else { return false }
      return error.code == .alreadyInUse
        && error.message.contains("is being written by another process (pid \(getpid()))")
    }
    // The refused sink did not truncate the first one's file.
    #expect(first.close(timeout: .seconds(5)))
    #expect(try TraceLog.read(contentsOf: path).count == 5)
    #expect(first.statistics.isComplete)
    // Once the first is closed, the path is free again.
    let next = try JSONLinesSink(path: path, append: true)
    #expect(next.close(timeout: .seconds(5)))
  }

  @Test func aReopenAfterARenameWritesTheRestToANewFileAndLosesNothing() throws {
    let path = Self.scratch("reopen")
    defer {
      unlink(path)
      unlink(path + ".1")
    }
    let sink = try JSONLinesSink(path: path)
    for seq in 1...30 { sink.enqueue(Self.record(seq)) }
    #expect(rename(path, path + ".1") == 0)
    // Queued before the reopen: still written to the renamed file.
    for seq in 31...40 { sink.enqueue(Self.record(seq)) }
    sink.reopen()
    for seq in 41...60 { sink.enqueue(Self.record(seq)) }
    #expect(sink.close(timeout: .seconds(5)))

    #expect(try TraceLog.read(contentsOf: path + ".1").map(\.seq) == (1...40).map { UInt64($0) })
    #expect(try TraceLog.read(contentsOf: path).map(\.seq) == (41...60).map { UInt64($0) })
    let statistics = sink.statistics
    #expect(statistics.reopens == 1)
    #expect(statistics.recordsWritten == 60)
    #expect(statistics.isComplete)
  }
}
