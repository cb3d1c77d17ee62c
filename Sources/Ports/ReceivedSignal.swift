import Glibc

/// One signal a ``SignalSource`` read from its `signalfd`: the number and who sent it.
///
/// ```swift
/// let source = try SignalSource(signals: [SIGTERM]) { received in
///   print("signal \(received.signal) from pid \(received.senderPID)")
/// }
/// ```
public struct ReceivedSignal: Sendable, Hashable, CustomStringConvertible {
  /// The signal number (`SIGTERM`, `SIGHUP`...).
  ///
  /// ```swift
  /// if received.signal == SIGHUP { reload() }
  /// ```
  public let signal: Int32
  /// The process that sent it (0 for the kernel).
  ///
  /// ```swift
  /// print("sent by pid \(received.senderPID)")
  /// ```
  public let senderPID: pid_t
  /// The real user id of the sender.
  ///
  /// ```swift
  /// print("sent by uid \(received.senderUID)")
  /// ```
  public let senderUID: uid_t

  /// Creates a value; the source makes these from `signalfd_siginfo`.
  ///
  /// ```swift
  /// let fake = ReceivedSignal(signal: SIGHUP, senderPID: getpid(), senderUID: getuid())
  /// ```
  package init(signal: Int32, senderPID: pid_t, senderUID: uid_t) {
    self.signal = signal
    self.senderPID = senderPID
    self.senderUID = senderUID
  }

  /// `signal 15 from pid 1234 (uid 0)`.
  ///
  /// ```swift
  /// print(received)  // "signal 15 from pid 1234 (uid 0)"
  /// ```
  public var description: String {
    "signal \(signal) from pid \(senderPID) (uid \(senderUID))"
  }
}
