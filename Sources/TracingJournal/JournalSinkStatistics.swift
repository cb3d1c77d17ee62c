/// What a ``JournalSink`` has done so far.
///
/// ```swift
/// let stats = sink.statistics
/// if stats.dropped > 0 { print("\(stats.dropped) records never reached the journal queue") }
/// ```
public struct JournalSinkStatistics: Sendable, Hashable {
  /// Entries journald accepted (records and drop reports).
  public var sent: UInt64
  /// Records dropped: because the queue was full (the journal was slower than the loops) or
  /// over the sink's rate limit (``rateLimited`` of them).
  public var dropped: UInt64
  /// Records the journal refused or that found no journal.
  public var failed: UInt64
  /// Drop reports sent to the journal.
  public var dropReports: UInt64
  /// Whether the latest send found no journal listening.
  public var journalAbsent: Bool
  /// The `errno` of the latest failed send.
  public var lastError: Int32?
  /// How many times this sink wrote "no journal answers" to standard error: at most once,
  /// and only by the first sink of the process to find no journal at its destination for a
  /// given reason (a program with a sink per loop says it once).
  ///
  /// ```swift
  /// let warned = stats.absenceReports == 1
  /// ```
  public var absenceReports: UInt64
  /// Records dropped by the sink's own ``JournalSink/RateLimit`` (included in ``dropped``).
  ///
  /// ```swift
  /// let overLimit = stats.rateLimited
  /// ```
  public var rateLimited: UInt64
  /// Records taken into the queue and not yet handed to journald (nor failed, nor over the
  /// rate limit): still queued, or waiting in a send that journald does not take. After a
  /// ``JournalSink/close(timeout:)`` that timed out, the entries the close left behind; they
  /// are lost if the process ends before journald takes them.
  ///
  /// ```swift
  /// let leftBehind = stats.unsent
  /// ```
  public var unsent: UInt64

  /// Creates statistics (the sink does this).
  ///
  /// ```swift
  /// let zero = JournalSinkStatistics(
  ///   sent: 0, dropped: 0, failed: 0, dropReports: 0, journalAbsent: false, lastError: nil,
  ///   absenceReports: 0, rateLimited: 0)
  /// ```
  package init(
    sent: UInt64, dropped: UInt64, failed: UInt64, dropReports: UInt64, journalAbsent: Bool,
    lastError: Int32?, absenceReports: UInt64, rateLimited: UInt64 = 0, unsent: UInt64 = 0
  ) {
    self.sent = sent
    self.dropped = dropped
    self.failed = failed
    self.dropReports = dropReports
    self.journalAbsent = journalAbsent
    self.lastError = lastError
    self.absenceReports = absenceReports
    self.rateLimited = rateLimited
    self.unsent = unsent
  }
}
