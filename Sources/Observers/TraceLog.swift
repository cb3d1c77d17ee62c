import Foundation
import RunLoopCore

/// Reading a JSON Lines trace back into ``TraceRecord`` values, for the trace tools.
///
/// ```swift
/// let records = try TraceLog.read(contentsOf: "/tmp/loop.jsonl")
/// let chrome = try ChromeTrace.json(from: records)
/// ```
public enum TraceLog {
  /// Parses JSON Lines text; blank lines are skipped.
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` naming the first line that
  ///   is not a record of a known schema version.
  ///
  /// ```swift
  /// let records = try TraceLog.parse(text)
  /// ```
  public static func parse(_ text: String) throws(RunLoopError) -> [TraceRecord] {
    let decoder = JSONDecoder()
    var records: [TraceRecord] = []
    for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
    where !line.allSatisfy(\.isWhitespace) {
      let record: TraceRecord
      do {
        record = try decoder.decode(TraceRecord.self, from: Data(line.utf8))
      } catch {
        throw .invalidArgument("line \(index + 1) is not a trace record: \(error)")
      }
      guard TraceRecord.readableVersions.contains(record.version) else {
        throw .invalidArgument(
          "line \(index + 1) has schema version \(record.version); this reader knows "
            + "\(TraceRecord.readableVersions.lowerBound) to "
            + "\(TraceRecord.readableVersions.upperBound)")
      }
      records.append(record)
    }
    return records
  }

  /// Reads and parses the file at `path`, strictly: any line that is not a record is an
  /// error. The trace tools use ``TraceLogReader`` instead, which streams and skips bad
  /// lines.
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when the file cannot be read
  ///   (with the failing call's `errno`), ``/RunLoopCore/RunLoopError/Code/invalidArgument``
  ///   for a malformed line.
  ///
  /// ```swift
  /// let records = try TraceLog.read(contentsOf: "trace.jsonl")
  /// ```
  public static func read(contentsOf path: String) throws(RunLoopError) -> [TraceRecord] {
    let reader = try TraceLogReader(path: path)
    var records: [TraceRecord] = []
    while let record = try reader.next() {
      guard reader.badLines == 0 else { break }
      records.append(record)
    }
    if let bad = reader.firstBadLine {
      throw .invalidArgument("line \(bad.line) of \(path): \(bad.reason)")
    }
    return records
  }
}
