import Foundation
import RunLoopCore
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// What the JSON Lines sink does when the file stops taking data: a full disk, a deleted
/// file, a FIFO nobody reads.
@Suite("JSON Lines sink losses")
struct JSONLinesSinkLossTests {
  static func record(_ seq: Int) -> TraceRecord {
    TraceRecord(
      run: "full", seq: UInt64(seq), record: .activity, timestamp: Int64(seq), wallTime: 0,
      pid: 1, tid: 2, thread: String(repeating: "t", count: 200), loop: 1, mode: "default",
      iteration: UInt64(seq), depth: 1, activity: "beforeTimers")
  }

  /// The lines of `path`, each parsed on its own (a glued or cut record fails to parse).
  static func lines(of path: String) throws -> [TraceRecord] {
    let text = try String(contentsOfFile: path, encoding: .utf8)
    #expect(text.isEmpty || text.hasSuffix("\n"), "the file ends inside a line")
    return try TraceLog.parse(text)
  }

  // A real full disk: a 64 KiB tmpfs. The write that fills it is short, the next one fails
  // with ENOSPC; the cut record is taken back out, the records that reached the file whole
  // are counted written and the others lost. Once space is freed, later records land on
  // lines of their own, after a loss record that counts the ones lost (a loss record that
  // fits in the room a taken-back record left may count some of them earlier).
  @Test(.enabled(if: SmallTmpfs.canMount, "needs root to mount a tmpfs"))
  func aFullDiskLeavesOnlyWholeRecordsAndCountsExactlyWhatReachedTheFile() throws {
    let disk = try SmallTmpfs(kilobytes: 64)
    defer { disk.unmount() }
    // Room for the sink to free later: a filler that takes part of the disk.
    let filler = disk.path + "/filler"
    try Data(count: 16 * 1024).write(to: URL(fileURLWithPath: filler))
    let path = disk.path + "/trace.jsonl"
    let sink = try JSONLinesSink(path: path)
    let first = 600  // about 170 KiB of lines: far more than the disk holds
    for seq in 1...first { sink.enqueue(Self.record(seq)) }
    #expect(sink.flush())
    let full = sink.statistics
    #expect(full.writeErrors >= 1)
    #expect(full.lastError == ENOSPC)
    #expect(full.recordsWritten > 0 && full.recordsLost > 0)
    #expect(full.recordsWritten + full.recordsLost == UInt64(first))
    #expect(full.partialRecords == 0)
    let atFull = try Self.lines(of: path).filter { $0.record != .loss }
    #expect(UInt64(atFull.count) == full.recordsWritten)
    #expect(atFull.map(\.seq) == (1...UInt64(atFull.count)).map { $0 })

    // Space comes back: the next records are written after the last whole one.
    #expect(unlink(filler) == 0)
    for seq in (first + 1)...(first + 10) { sink.enqueue(Self.record(seq)) }
    #expect(sink.close(timeout: .seconds(5)))
    let final = sink.statistics
    #expect(final.recordsWritten + final.recordsLost == UInt64(first + 10))
    let lines = try Self.lines(of: path)
    let after = lines.filter { $0.record != .loss }
    let losses = lines.filter { $0.record == .loss }
    #expect(UInt64(after.count) == final.recordsWritten)
    #expect(Array(after.map(\.seq).suffix(10)) == ((first + 1)...(first + 10)).map { UInt64($0) })
    // Every record lost is counted by a loss record in the file, the last of them just
    // before the records written once space came back.
    #expect(losses.map { $0.lost ?? 0 }.reduce(0, +) == final.recordsLost)
    #expect(UInt64(losses.count) == final.lossRecords)
    #expect(losses.allSatisfy { $0.run == "full" && $0.seq == 0 && $0.loop == 0 })
    #expect(lines.suffix(11).first?.record == .loss)
    let summary = TraceSummary(records: lines)
    #expect(summary.recordsLost == final.recordsLost)
    #expect(summary.text.contains("its writer lost \(final.recordsLost) records"))
  }

  // On /dev/full no write ever succeeds: the loss has no loss record (nothing can hold it),
  // and the statistics still count every record.
  @Test func aLossNoWriteCanReportLeavesNoLossRecordAndIsCounted() throws {
    let sink = try JSONLinesSink(path: "/dev/full")
    for seq in 1...20 { sink.enqueue(Self.record(seq)) }
    #expect(sink.close(timeout: .seconds(5)))
    let statistics = sink.statistics
    #expect(statistics.recordsLost == 20)
    #expect(statistics.recordsWritten == 0)
    #expect(statistics.lossRecords == 0)
  }

  // A file deleted while it is written: every write succeeds, but the records went to a
  // file nobody can open any more, and the statistics say so.
  @Test func aFileDeletedWhileWrittenIsReportedAsRemoved() throws {
    let path = temporaryPath("deleted.jsonl")
    let sink = try JSONLinesSink(path: path)
    for seq in 1...50 { sink.enqueue(Self.record(seq)) }
    #expect(sink.flush())
    #expect(unlink(path) == 0)
    for seq in 51...60 { sink.enqueue(Self.record(seq)) }
    #expect(sink.close(timeout: .seconds(5)))
    let statistics = sink.statistics
    #expect(statistics.recordsWritten == 60)
    #expect(statistics.fileRemoved)
    #expect(!statistics.isComplete)
  }

  @Test func aFileKeptToTheEndIsComplete() throws {
    let path = temporaryPath("kept.jsonl")
    defer { unlink(path) }
    let sink = try JSONLinesSink(path: path)
    for seq in 1...50 { sink.enqueue(Self.record(seq)) }
    #expect(sink.close(timeout: .seconds(5)))
    #expect(!sink.statistics.fileRemoved)
    #expect(sink.statistics.isComplete)
  }

  // Opening a FIFO for writing blocks until a reader comes; the sink opens without
  // blocking and says at once that nobody reads.
  @Test func aFIFOWithNoReaderFailsToOpenAtOnceWithENXIO() throws {
    let path = temporaryPath("noreader.fifo")
    #expect(mkfifo(path, 0o600) == 0)
    defer { unlink(path) }
    let outcome = GuardedState<RunLoopError?>(nil)
    let thread = Thread {
      do {
        let sink = try JSONLinesSink(path: path)
        sink.close()
        outcome.withLock { $0 = RunLoopError.invalidArgument("it opened") }
      } catch {
        outcome.withLock { $0 = error as? RunLoopError }
      }
    }
    thread.start()
    #expect(eventually(5) { outcome.withLock { $0 } != nil }, "open(2) still blocks")
    let error = try #require(outcome.withLock { $0 })
    #expect(error.systemError == ENXIO)
    #expect(error.message.contains("no process has it open for reading"))
  }

  // With a reader the FIFO opens, and writes block (for the writer thread) rather than
  // failing with EAGAIN when the reader is slow.
  @Test func aFIFOWithAReaderOpensAndGetsEveryRecord() throws {
    let path = temporaryPath("reader.fifo")
    #expect(mkfifo(path, 0o600) == 0)
    defer { unlink(path) }
    let reader = open(path, O_RDONLY | O_NONBLOCK)
    #expect(reader >= 0)
    defer { close(reader) }
    let sink = try JSONLinesSink(path: path)
    for seq in 1...2_000 { sink.enqueue(Self.record(seq)) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    #expect(
      eventually(10) {
        let count = read(reader, &buffer, buffer.count)
        if count > 0 { bytes += buffer[0..<count] }
        return bytes.filter { $0 == 10 }.count == 2_000
      })
    #expect(sink.close(timeout: .seconds(5)))
    #expect(sink.statistics.recordsWritten == 2_000)
    #expect(sink.statistics.recordsLost == 0)
  }
}
