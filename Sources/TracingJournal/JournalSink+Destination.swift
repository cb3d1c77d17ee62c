import CSystemdJournal
import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTracing

extension JournalSink {
  /// Where entries go.
  ///
  /// ```swift
  /// let sink = JournalSink(destination: .socket(path: "/run/systemd/journal.ns/socket"))
  /// ```
  public enum Destination: Sendable, Hashable {
    /// The system journal, through `sd_journal_sendv`.
    case systemJournal
    /// A journald native-protocol datagram socket at `path`, written without libsystemd (for
    /// a journald namespace's socket, or a socket a test controls).
    case socket(path: String)
  }
}
