import Foundation
import Glibc
import RunLoopTracing
import Testing

/// The trace tools on logs that are large, damaged or empty.
@Suite("runloop-demo trace: streaming and damaged logs")
struct TraceToolStreamingTests {
  /// A plausible record of loop `loop`, `seq`, with a call-out name of `nameBytes` bytes.
  static func record(_ seq: Int, loop: UInt64 = 1, nameBytes: Int = 8) -> TraceRecord {
    let kinds: [TraceRecord.Kind] = [.activity, .callout, .sleep]
    let kind = kinds[seq % 3]
    return TraceRecord(
      run: "stream", seq: UInt64(seq), record: kind, timestamp: Int64(seq) * 1_000, wallTime: 0,
      pid: 1, tid: Int32(loop) + 1,
      thread: "thread-\(loop)" + String(repeating: "t", count: nameBytes),
      loop: loop, mode: "default",
      iteration: UInt64(seq / 3), depth: 1, activity: kind == .activity ? "beforeTimers" : nil,
      calloutKind: kind == .callout ? "source" : nil,
      calloutName: kind == .callout
        ? "n\(seq % 20)" + String(repeating: "x", count: nameBytes) : nil,
      duration: kind == .activity ? nil : 500)
  }

  /// Writes `count` records (and `tail` as it is) to a fresh file, `repeats` times over
  /// (a large log fast); returns its path.
  static func writeLog(
    _ name: String, count: Int, nameBytes: Int = 8, tail: String = "", loops: UInt64 = 1,
    repeats: Int = 1
  ) throws -> String {
    let path = try scratchDirectory(name) + "/trace.jsonl"
    let handle = try #require(FileHandle(forWritingAtPath: createEmpty(path)))
    defer { try? handle.close() }
    var chunk = ""
    for seq in 0..<count {
      chunk += record(seq + 1, loop: UInt64(seq) % loops + 1, nameBytes: nameBytes).jsonLine
    }
    let bytes = Data(chunk.utf8)
    for _ in 0..<repeats { try handle.write(contentsOf: bytes) }
    try handle.write(contentsOf: Data(tail.utf8))
    return path
  }

  static func createEmpty(_ path: String) -> String {
    #expect(FileManager.default.createFile(atPath: path, contents: nil), "cannot create \(path)")
    return path
  }

  /// Runs the demo with `arguments` to its end; its peak resident set size (KiB) from
  /// wait4(2), which reports the child's own figure.
  static func peakResidentKilobytes(_ arguments: [String]) throws -> (status: Int32, kilobytes: Int)
  {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = ([demoBinary] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, demoBinary, &actions, nil, argv, environ)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
    return ((status >> 8) & 0xFF, usage.ru_maxrss)
  }

  // A 50+ MB log: summary and export stream it, so their peak memory barely differs from
  // theirs on a log of a few records (loading it whole took several times its size).
  @Test func summaryAndExportOfA50MBLogStayInBoundedMemory() throws {
    let big = try Self.writeLog("big", count: 1_000, nameBytes: 1_000, loops: 3, repeats: 55)
    let size = try #require(FileManager.default.attributesOfItem(atPath: big)[.size] as? Int)
    #expect(size > 50_000_000)
    let small = try Self.writeLog("small", count: 30, loops: 3)
    let bigSummary = try Self.peakResidentKilobytes(["trace", "summary", big])
    let smallSummary = try Self.peakResidentKilobytes(["trace", "summary", small])
    #expect(bigSummary.status == 0 && smallSummary.status == 0)
    #expect(
      bigSummary.kilobytes - smallSummary.kilobytes < 20_000,
      "summary: \(smallSummary.kilobytes) KiB for 30 records, \(bigSummary.kilobytes) KiB for 55,000"
    )
    let out = big + ".chrome.json"
    let bigExport = try Self.peakResidentKilobytes(["trace", "export", big, "--chrome", out])
    #expect(bigExport.status == 0)
    #expect(
      bigExport.kilobytes - smallSummary.kilobytes < 20_000,
      "export: \(bigExport.kilobytes) KiB for 55,000 records")
    // The export is whole: every record became an event (one per line), and each thread got
    // its name (a small export is parsed as JSON by TraceCommandTests).
    let exported = try Data(contentsOf: URL(fileURLWithPath: out))
    let lines = exported.split(separator: UInt8(ascii: "\n"))
    #expect(lines.first.map { String(decoding: $0, as: UTF8.self) }?.hasPrefix("{") == true)
    #expect(lines.last.map { String(decoding: $0, as: UTF8.self) } == "]}")
    #expect(lines.count - 2 == 55_000 + 3)
  }

  // What a crash or a full disk leaves: a cut-off last line. The tools use the rest and
  // say what they skipped.
  @Test func aCutOffLastLineIsSkippedAndReportedNotFatal() throws {
    let log = try Self.writeLog("cutoff", count: 30, tail: #"{"v":1,"run":"stream","seq":31,"rec"#)
    let summary = try runDemo(["trace", "summary", log])
    #expect(summary.status == 0, "\(summary.stderr)")
    #expect(summary.stdout.hasPrefix("30 records, run id stream"))
    #expect(
      summary.stderr.contains("skipped 1 line that is not a trace record (line 31: cut off"),
      "\(summary.stderr)")
    let chrome = log + ".json"
    let export = try runDemo(["trace", "export", log, "--chrome", chrome])
    #expect(export.status == 0, "\(export.stderr)")
    #expect(export.stdout.contains("30 records as 31 Chrome trace events"))
    #expect(export.stderr.contains("cut off"))
    let timeline = try runDemo(["trace", "timeline", log, "--svg", log + ".svg"])
    #expect(timeline.status == 0, "\(timeline.stderr)")
    #expect(timeline.stderr.contains("cut off"))
  }

  @Test func badLinesInTheMiddleAreCountedAndSkipped() throws {
    var lines = (1...20).map { Self.record($0).jsonLine }
    lines.insert("garbage\n", at: 5)
    lines.insert(#"{"v":99,"run":"x"}"# + "\n", at: 10)
    lines.insert("\n", at: 12)
    let path = try scratchDirectory("badlines") + "/trace.jsonl"
    try lines.joined().write(toFile: path, atomically: false, encoding: .utf8)
    let summary = try runDemo(["trace", "summary", path])
    #expect(summary.status == 0, "\(summary.stderr)")
    #expect(summary.stdout.hasPrefix("20 records"))
    #expect(
      summary.stderr.contains("skipped 2 lines that are not trace records (the first, line 6"),
      "\(summary.stderr)")
  }

  @Test(arguments: ["empty", "/dev/null"])
  func anEmptyLogIsAnErrorThatSaysSo(file: String) throws {
    let path = file == "empty" ? try Self.writeLog("empty", count: 0) : file
    let result = try runDemo(["trace", "summary", path])
    #expect(result.exitedNormally && result.status == 1)
    #expect(
      result.stderr.contains("'\(path)' is empty: it holds no trace records"), "\(result.stderr)")
    #expect(!result.stderr.contains("Inappropriate ioctl"))
  }

  @Test func aFailedReadNamesItsOwnError() throws {
    let directory = try scratchDirectory("readerrors")
    let missing = try runDemo(["trace", "summary", directory + "/missing.jsonl"])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("No such file or directory"), "\(missing.stderr)")
    let folder = try runDemo(["trace", "export", directory, "--chrome", directory + "/x.json"])
    #expect(folder.status == 1)
    #expect(folder.stderr.contains("Is a directory"), "\(folder.stderr)")
    let unwritable = try runDemo(
      [
        "trace", "export", try Self.writeLog("unwritable", count: 3), "--chrome",
        directory + "/no/x.json",
      ])
    #expect(unwritable.status == 1)
    #expect(unwritable.stderr.contains("No such file or directory"), "\(unwritable.stderr)")
  }
}
