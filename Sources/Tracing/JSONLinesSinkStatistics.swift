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
  ///
  /// ```swift
  /// let writeErrors = stats.writeErrors
  /// ```
  public var writeErrors: UInt64
  /// The `errno` of the latest failed write.
  ///
  /// ```swift
  /// let lastError = stats.lastError
  /// ```
  public var lastError: Int32?
  /// The most records that waited in the queue at once.
  ///
  /// ```swift
  /// let highWater = stats.queueHighWater
  /// ```
  public var queueHighWater: Int
  /// Whether the writer has written everything and closed the file (after a close).
  ///
  /// ```swift
  /// let closed = stats.closed
  /// ```
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

  /// Whether every record queued reached a file that still has its name: none lost, none
  /// still pending, the file not deleted. What a program checks before it reports its trace
  /// as written.
  ///
  /// ```swift
  /// sink.close()
  /// if !sink.statistics.isComplete { print("the trace is incomplete") }
  /// ```
  public var isComplete: Bool { recordsLost == 0 && recordsPending == 0 && !fileRemoved }

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
    partialRecords: UInt64 = 0
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
  }
}
