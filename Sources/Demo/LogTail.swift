import Glibc
import RunLoopCore
import RunLoopTracing

/// Reads a growing JSON log: each call hands over the records of the complete lines added
/// since the previous one (a line still being written waits for its newline).
///
/// The lines go through ``TraceLogReader``, as the trace tools read them: a line that is not
/// a record is skipped and counted (``badLines``), not fatal, and a line longer than
/// ``TraceLogReader/maximumLineBytes`` is skipped without being kept. The file is read a
/// chunk at a time, so memory stays bounded however much the log grew between two calls.
struct LogTail {
  typealias BadLine = TraceLogReader.BadLine

  let path: String
  /// Lines skipped because they were not records.
  private(set) var badLines = 0
  /// The first of them (its number counted from the start of the log).
  private(set) var firstBadLine: BadLine?
  private var offset = 0
  private var partial: [UInt8] = []
  // Lines consumed so far (for the bad lines' numbers).
  private var lines = 0
  // Dropping the rest of a line longer than the reader's limit, up to its newline.
  private var skippingLongLine = false
  /// Bytes of backlog passed over to start near the end (see ``readNewRecords(upTo:tail:_:)``).
  private(set) var skippedBytes = 0
  private static let chunkBytes = 1 << 16

  init(path: String) {
    self.path = path
  }

  /// Hands `body` each record of the complete lines added since the last call, reading at
  /// most `limit` bytes; returns whether more is there to read. A log not there yet holds
  /// nothing; a log shorter than what was read (truncated and started again) is read from
  /// its beginning. With `tail`, a first read of a log larger than that starts `tail` bytes
  /// before its end, at a line's start (``skippedBytes`` says how much was passed over).
  ///
  /// - Throws: `DemoError` naming the failed call's error (other than a missing file).
  @discardableResult
  mutating func readNewRecords(
    upTo limit: Int = .max, tail: Int? = nil, _ body: (TraceRecord) -> Void
  ) throws -> Bool {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    if descriptor < 0 {
      if errno == ENOENT { return false }
      throw DemoError("cannot read '\(path)': \(String(cString: strerror(errno)))")
    }
    defer { close(descriptor) }
    var info = stat()
    if fstat(descriptor, &info) == 0, info.st_size < offset {
      offset = 0
      partial = []
      lines = 0
      skippingLongLine = false
      skippedBytes = 0
    }
    if let tail, offset == 0, Int(info.st_size) > tail {
      // The rest of the line the jump lands in is not a record: dropped, not counted bad.
      offset = Int(info.st_size) - tail
      skippedBytes = offset
      skippingLongLine = true
    }
    var chunk = [UInt8](repeating: 0, count: Self.chunkBytes)
    var read = 0
    while read < limit {
      let got = chunk.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
      if got < 0 {
        if errno == EINTR { continue }
        throw DemoError("cannot read '\(path)': \(String(cString: strerror(errno)))")
      }
      if got == 0 { return false }
      offset += got
      read += got
      take(chunk[..<got], body)
    }
    return true
  }

  /// Adds `bytes` to the unfinished line and hands over the records of the lines completed.
  private mutating func take(_ bytes: ArraySlice<UInt8>, _ body: (TraceRecord) -> Void) {
    var bytes = bytes
    if skippingLongLine {
      guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return }
      skippingLongLine = false
      lines += 1
      bytes = bytes[(newline + 1)...]
    }
    partial += bytes
    guard let lastNewline = partial.lastIndex(of: UInt8(ascii: "\n")) else {
      if partial.count > TraceLogReader.maximumLineBytes {
        let reason = "longer than \(TraceLogReader.maximumLineBytes) bytes"
        noteBad(BadLine(line: lines + 1, reason: reason))
        partial = []
        skippingLongLine = true
      }
      return
    }
    let reader = TraceLogReader(bytes: Array(partial[...lastNewline]), name: path)
    // Reading bytes in memory cannot fail (only a file's read can).
    while let record = try? reader.next() { body(record) }
    if let first = reader.firstBadLine {
      badLines += reader.badLines
      noteBad(BadLine(line: lines + first.line, reason: first.reason), count: 0)
    }
    lines += reader.linesRead
    partial.removeSubrange(...lastNewline)
  }

  private mutating func noteBad(_ line: BadLine, count: Int = 1) {
    badLines += count
    if firstBadLine == nil { firstBadLine = line }
  }

  /// A note for people about the lines skipped, or `nil` when there were none.
  var badLineNote: String? {
    guard badLines > 0, let first = firstBadLine else { return nil }
    return TraceLogReader.summary(ofBadLines: badLines, first: first)
  }
}
