import Foundation
import Glibc

#if canImport(RunLoopCore)
  import RunLoopCore
#endif

/// Reads a JSON Lines trace one record at a time, in bounded memory, skipping the lines
/// that are not records and counting them: what the trace tools use, so that a log of any
/// size can be summarised and one damaged line (the cut-off last line a crash or a full disk
/// leaves) does not reject the file.
///
/// Memory stays at the read buffer (64 KiB) plus the longest line, itself bounded by
/// ``maximumLineBytes``: a longer line is skipped as bad without being kept.
///
/// ```swift
/// let reader = try TraceLogReader(path: "trace.jsonl")
/// while let record = try reader.next() { print(record.seq) }
/// if reader.badLines > 0 { print("skipped \(reader.badLines) bad lines") }
/// ```
public final class TraceLogReader {
  /// The longest line read as a possible record (1 MiB; records are well under 1 KiB).
  ///
  /// ```swift
  /// let limit = TraceLogReader.maximumLineBytes
  /// ```
  public static let maximumLineBytes = 1 << 20

  /// What is being read, for messages.
  public let name: String
  /// Records returned so far.
  public private(set) var records = 0
  /// Lines skipped because they were not records of this schema version (blank lines are
  /// neither records nor bad).
  ///
  /// ```swift
  /// let bad = reader.badLines
  /// ```
  public private(set) var badLines = 0
  /// The first bad line, with why.
  ///
  /// ```swift
  /// let first = reader.firstBadLine
  /// ```
  public private(set) var firstBadLine: BadLine?
  /// Whether the input ended inside a line that was not a whole record: the cut-off last
  /// line a crash or a full disk leaves (counted in ``badLines`` too).
  ///
  /// ```swift
  /// if reader.endsWithCutOffLine { print("the last record was cut off") }
  /// ```
  public private(set) var endsWithCutOffLine = false

  private var descriptor: Int32
  // The bytes read and not yet consumed are storage[start..<count]. Raw memory, allocated
  // and freed by the reader, so that finding a line is one memchr and reading is read(2)
  // into place: per-byte collection code would cost most of the reading time in a debug build.
  private var storage: UnsafeMutablePointer<UInt8>
  private var capacity: Int
  private var count = 0
  private var start = 0
  private var atEnd = false
  private var lineNumber = 0
  // Skipping the rest of a line longer than maximumLineBytes.
  private var skippingLongLine = false
  private let decoder = JSONDecoder()
  private static let chunkBytes = 1 << 16

  /// Opens the file at `path`.
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` with the `errno` of the
  ///   failed call (`ENOENT`, `EACCES`, `EISDIR` for a directory, ...).
  ///
  /// ```swift
  /// let reader = try TraceLogReader(path: "trace.jsonl")
  /// ```
  public init(path: String) throws(RunLoopError) {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw RunLoopError.systemCall("open(\(path))", errno: errno) }
    var info = stat()
    if fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
      close(descriptor)
      throw RunLoopError.systemCall("read(\(path))", errno: EISDIR)
    }
    self.descriptor = descriptor
    self.name = path
    self.capacity = Self.chunkBytes * 2
    self.storage = .allocate(capacity: capacity)
  }

  /// Reads `bytes` (for a trace already in memory).
  ///
  /// ```swift
  /// let reader = TraceLogReader(bytes: Array(text.utf8))
  /// ```
  public init(bytes: [UInt8], name: String = "<memory>") {
    self.descriptor = -1
    let storage = UnsafeMutablePointer<UInt8>.allocate(capacity: max(bytes.count, 1))
    storage.initialize(from: bytes, count: bytes.count)
    self.capacity = max(bytes.count, 1)
    self.storage = storage
    self.count = bytes.count
    self.atEnd = true
    self.name = name
  }

  deinit {
    if descriptor >= 0 { close(descriptor) }
    storage.deallocate()
  }

  /// The next record, skipping (and counting) bad lines; `nil` at the end.
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when reading fails, with
  ///   that read's `errno`.
  ///
  /// ```swift
  /// while let record = try reader.next() { handle(record) }
  /// ```
  public func next() throws(RunLoopError) -> TraceRecord? {
    while let (range, complete) = try nextLine() {
      if let record = decode(range, complete: complete) { return record }
    }
    return nil
  }

  /// A text for people about the bad lines, or `nil` when there were none.
  ///
  /// ```swift
  /// if let note = reader.badLineSummary { print(note) }
  /// ```
  public var badLineSummary: String? {
    guard badLines > 0, let first = firstBadLine else { return nil }
    var text = Self.summary(ofBadLines: badLines, first: first)
    if endsWithCutOffLine, first.line != lineNumber { text += "; the last line is cut off" }
    return text
  }

  /// The words for `count` skipped lines, the first of them `first`: one text wherever
  /// lines are skipped (this reader, and readers of a growing log that count across reads).
  ///
  /// ```swift
  /// TraceLogReader.summary(ofBadLines: 1, first: .init(line: 4, reason: "not JSON"))
  /// ```
  package static func summary(ofBadLines count: Int, first: BadLine) -> String {
    let place = "line \(first.line): \(first.reason)"
    return count == 1
      ? "skipped 1 line that is not a trace record (\(place))"
      : "skipped \(count) lines that are not trace records (the first, \(place))"
  }

  /// How many lines were read so far (a line cut off at the end included).
  ///
  /// ```swift
  /// let lines = reader.linesRead
  /// ```
  package var linesRead: Int { lineNumber }

  /// The bytes of the next line (without its newline) and whether it ended with one.
  private func nextLine() throws(RunLoopError) -> (Range<Int>, Bool)? {
    var searchFrom = start
    while true {
      if searchFrom < count,
        let found = memchr(storage + searchFrom, Int32(UInt8(ascii: "\n")), count - searchFrom)
      {
        let newline = storage.distance(to: found.assumingMemoryBound(to: UInt8.self))
        let range = start..<newline
        start = newline + 1
        lineNumber += 1
        if skippingLongLine {
          skippingLongLine = false
          searchFrom = start
          continue
        }
        return (range, true)
      }
      if atEnd {
        guard start < count else { return nil }
        let range = start..<count
        start = count
        lineNumber += 1
        if skippingLongLine { return nil }
        return (range, false)
      }
      if count - start > Self.maximumLineBytes, !skippingLongLine {
        // Too long to be a record: count it now and drop its bytes as they come.
        noteBad(lineNumber + 1, "longer than \(Self.maximumLineBytes) bytes")
        skippingLongLine = true
      }
      if skippingLongLine {
        count = 0
        start = 0
      } else if start > 0 {
        // Keep the start of the unfinished line only.
        memmove(storage, storage + start, count - start)
        count -= start
        start = 0
      }
      searchFrom = count
      try fill()
    }
  }

  /// Appends up to a chunk from the file; sets `atEnd` at its end.
  private func fill() throws(RunLoopError) {
    guard descriptor >= 0 else {
      atEnd = true
      return
    }
    if capacity - count < Self.chunkBytes {
      let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity * 2)
      larger.update(from: storage, count: count)
      storage.deallocate()
      storage = larger
      capacity *= 2
    }
    var got: Int
    repeat {
      got = read(descriptor, storage + count, Self.chunkBytes)
    } while got < 0 && errno == EINTR
    if got < 0 { throw RunLoopError.systemCall("read(\(name))", errno: errno) }
    count += got
    if got == 0 { atEnd = true }
  }

  private func decode(_ range: Range<Int>, complete: Bool) -> TraceRecord? {
    let base = storage + range.lowerBound
    var blank = true
    for offset in 0..<range.count {
      let byte = base[offset]
      if byte != 0x20, byte != 0x09, byte != 0x0D {
        blank = false
        break
      }
    }
    if blank { return nil }
    let record: TraceRecord
    do {
      record = try decoder.decode(
        TraceRecord.self, from: Data(bytesNoCopy: base, count: range.count, deallocator: .none))
    } catch {
      if !complete { endsWithCutOffLine = true }
      let reason = complete ? Self.reason(error) : "cut off (no newline at the end)"
      noteBad(lineNumber, reason)
      return nil
    }
    guard TraceRecord.readableVersions.contains(record.version) else {
      noteBad(
        lineNumber,
        "schema version \(record.version); this reader knows "
          + "\(TraceRecord.readableVersions.lowerBound) to "
          + "\(TraceRecord.readableVersions.upperBound)")
      return nil
    }
    records += 1
    return record
  }

  /// A decoding error, briefly.
  private static func reason(_ error: any Error) -> String {
    func field(_ path: [any CodingKey], _ key: (any CodingKey)? = nil) -> String {
      ((path + (key.map { [$0] } ?? [])).map(\.stringValue)).joined(separator: ".")
    }
    switch error as? DecodingError {
    case .keyNotFound(let key, let context)?:
      return "not a trace record (no \"\(field(context.codingPath, key))\")"
    case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
      return "not a trace record (bad \"\(field(context.codingPath))\")"
    case .dataCorrupted(let context)? where !context.codingPath.isEmpty:
      return "not a trace record (bad \"\(field(context.codingPath))\")"
    default:
      return "not JSON"
    }
  }

  private func noteBad(_ line: Int, _ reason: String) {
    badLines += 1
    if firstBadLine == nil { firstBadLine = BadLine(line: line, reason: reason) }
  }
}
