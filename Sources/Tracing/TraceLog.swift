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
    try strictly(TraceLogReader(bytes: Array(text.utf8)))
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
    try strictly(TraceLogReader(path: path))
  }

  /// The records `reader` reads, or an error naming the first line that is not one: the
  /// tools' reader serves the strict readers too, so both take the same lines and versions.
  private static func strictly(_ reader: TraceLogReader) throws(RunLoopError) -> [TraceRecord] {
    var records: [TraceRecord] = []
    while let record = try reader.next() {
      guard reader.badLines == 0 else { break }
      records.append(record)
    }
    if let bad = reader.firstBadLine {
      throw .invalidArgument("line \(bad.line) of \(reader.name): \(bad.reason)")
    }
    return records
  }
}
