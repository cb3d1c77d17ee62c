/// What a ``JSONLinesSink`` has done so far.
///
/// ```swift
/// let stats = sink.statistics
/// if stats.writeErrors > 0 { print("\(stats.recordsLost) records could not be written") }
/// ```
public struct JSONLinesSinkStatistics: Sendable, Hashable {
  /// Records written to the file.
  ///
  /// ```swift
  /// let written = stats.recordsWritten
  /// ```
  public var recordsWritten: UInt64
  /// Records queued and not written yet (still queued, or being written). After a
  /// ``JSONLinesSink/close(timeout:)`` that timed out, what the writer still has to write.
  ///
  /// ```swift
  /// let pending = stats.recordsPending
  /// ```
  public var recordsPending: UInt64
  /// Records lost because `write(2)` failed for them (a full disk, a closed pipe).
  ///
  /// ```swift
  /// let lost = stats.recordsLost
  /// ```
  public var recordsLost: UInt64
  /// Failed `write(2)` calls (each loses the records of its chunk).
  public var writeErrors: UInt64
  /// The `errno` of the latest failed write.
  public var lastError: Int32?
  /// The most records that waited in the queue at once.
  ///
  /// ```swift
  /// let highWater = stats.queueHighWater
  /// ```
  public var queueHighWater: Int
  /// Whether the writer has written everything and closed the file (after a close).
  public var closed: Bool
  /// Whether the file had been deleted (no name left) when the writer closed it: every
  /// record "written" went to a file nobody can open any more.
  ///
  /// ```swift
  /// if stats.fileRemoved { print("the trace file was deleted while it was written") }
  /// ```
  public var fileRemoved: Bool
  /// Records a failed write cut short that could not be taken back out (only a regular file
  /// can be truncated): each left one line that is not a whole record, with the records
  /// after it on lines of their own. Counted in ``recordsLost`` too.
  ///
  /// ```swift
  /// let damagedLines = stats.partialRecords
  /// ```
  public var partialRecords: UInt64
  /// How often the writer found the file shorter than what it had written: another process
  /// truncated it (logrotate's `copytruncate`, `truncate -s 0`). Writes append, so the next
  /// records start at the new end, with no hole before them.
  ///
  /// ```swift
  /// if stats.truncations > 0 { print("the log was truncated \(stats.truncations) times") }
  /// ```
  public var truncations: UInt64
  /// The records of ours the file held when it was found truncated: no longer in it. A
  /// `copytruncate` rotation copied them first, less those written between its copy and
  /// its truncation, which no one can tell apart from here: so this is the most that were
  /// lost. Counted in ``recordsWritten`` too.
  ///
  /// ```swift
  /// let atMostLost = stats.recordsTruncated
  /// ```
  public var recordsTruncated: UInt64
  /// Bytes someone else added to the file while the sink wrote it (a second writer).
  ///
  /// ```swift
  /// if stats.foreignBytes > 0 { print("another process writes this log too") }
  /// ```
  public var foreignBytes: UInt64
  /// Times ``JSONLinesSink/reopen()`` moved the sink to a new file at its path.
  public var reopens: UInt64
  /// Reopens that failed (the new file could not be opened or was locked by another
  /// writer): the sink went on with the file it had.
  ///
  /// ```swift
  /// let failures = stats.reopenFailures
  /// ```
  public var reopenFailures: UInt64
  /// Whether, at close, the path named another file (or none) while the file written still
  /// had a name: it was renamed (a rotation without a reopen), and its records are under
  /// the new name. Not a loss.
  ///
  /// ```swift
  /// if stats.fileRenamed { print("the log was renamed; its records are under the new name") }
  /// ```
  public var fileRenamed: Bool
  /// Loss records the sink wrote into the file (`"record":"loss"`, see
  /// ``TraceRecord/Kind/loss``): after records were lost or truncated away, the first write
  /// that succeeds (or the close) says how many. They are the sink's own lines, not counted
  /// in ``recordsWritten``.
  ///
  /// ```swift
  /// let marked = stats.lossRecords  // lines in the file that count the records lost
  /// ```
  public var lossRecords: UInt64

  /// Whether every record queued reached a file that still has its name, and the file is
  /// ours alone: none lost, none still pending, the file not deleted, not truncated, not
  /// written by anyone else. What a program checks before it reports its trace as written.
  ///
  /// ```swift
  /// sink.close()
  /// if !sink.statistics.isComplete { print("the trace is incomplete") }
  /// ```
  public var isComplete: Bool {
    recordsLost == 0 && recordsPending == 0 && !fileRemoved && truncations == 0
      && foreignBytes == 0
  }

  /// Creates statistics (the sink does this).
  ///
  /// ```swift
  /// let zero = JSONLinesSinkStatistics(
  ///   recordsWritten: 0, recordsPending: 0, recordsLost: 0, writeErrors: 0, lastError: nil,
  ///   queueHighWater: 0, closed: false)
  /// ```
  package init(
    recordsWritten: UInt64, recordsPending: UInt64, recordsLost: UInt64, writeErrors: UInt64,
    lastError: Int32?, queueHighWater: Int, closed: Bool, fileRemoved: Bool = false,
    partialRecords: UInt64 = 0, truncations: UInt64 = 0, recordsTruncated: UInt64 = 0,
    foreignBytes: UInt64 = 0, reopens: UInt64 = 0, reopenFailures: UInt64 = 0,
    fileRenamed: Bool = false, lossRecords: UInt64 = 0
  ) {
    self.recordsWritten = recordsWritten
    self.recordsPending = recordsPending
    self.recordsLost = recordsLost
    self.writeErrors = writeErrors
    self.lastError = lastError
    self.queueHighWater = queueHighWater
    self.closed = closed
    self.fileRemoved = fileRemoved
    self.partialRecords = partialRecords
    self.truncations = truncations
    self.recordsTruncated = recordsTruncated
    self.foreignBytes = foreignBytes
    self.reopens = reopens
    self.reopenFailures = reopenFailures
    self.fileRenamed = fileRenamed
    self.lossRecords = lossRecords
  }
}
