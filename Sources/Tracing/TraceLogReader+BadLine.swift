import Foundation
import Glibc

extension TraceLogReader {
  /// A line that was not a record.
  ///
  /// ```swift
  /// if let bad = reader.firstBadLine { print("line \(bad.line): \(bad.reason)") }
  /// ```
  public struct BadLine: Sendable, Hashable {
    /// The line's number, from 1.
    public var line: Int
    /// Why it is not a record.
    public var reason: String

    /// A bad line: its number and why it is not a record.
    ///
    /// ```swift
    /// let bad = TraceLogReader.BadLine(line: 4, reason: "not JSON")
    /// ```
    package init(line: Int, reason: String) {
      self.line = line
      self.reason = reason
    }
  }
}
