import CSystemdJournal
import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTracing

extension JournalSink {
  /// The fixed `MESSAGE_ID` of each kind of entry, so that `journalctl MESSAGE_ID=...` finds
  /// one kind.
  ///
  /// ```swift
  /// // journalctl MESSAGE_ID=9d91b4b8f1a1497898a3c0378e87e7b9  (drop reports)
  /// ```
  public enum MessageID {
    /// An activity record.
    ///
    /// ```swift
    /// let id = JournalSink.MessageID.activity
    /// ```
    public static let activity = "dc88c04a336245a5b7042bba68e627c3"
    /// A call-out record.
    ///
    /// ```swift
    /// let id = JournalSink.MessageID.callout
    /// ```
    public static let callout = "b23ceee1a61148e9bc7a7262d9cba253"
    /// A sleep record.
    ///
    /// ```swift
    /// let id = JournalSink.MessageID.sleep
    /// ```
    public static let sleep = "d9795e2a38344bae831753d40f374958"
    /// A stall: a loop awake past the watchdog's threshold (priority 4, warning).
    ///
    /// ```swift
    /// let id = JournalSink.MessageID.stall
    /// ```
    public static let stall = "1811693dc5ce4289a48ac937b9836ee2"
    /// A stalled loop's recovery (priority 5, notice).
    ///
    /// ```swift
    /// let id = JournalSink.MessageID.recovery
    /// ```
    public static let recovery = "d167c36f305b4a488cec4073b55e91da"
    /// A report of dropped or undeliverable records.
    ///
    /// ```swift
    /// let id = JournalSink.MessageID.drops
    /// ```
    public static let drops = "9d91b4b8f1a1497898a3c0378e87e7b9"
  }
}
