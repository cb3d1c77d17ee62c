import RunLoopCore

/// The failures a client of a requests-sequence server can get (in ``NamedPort/request(msgid:data:sendTimeout:receiveTimeout:)``).
extension RunLoopError.Code {
  /// The server's sequence buffer was full: its consumer falls behind. Nothing was handled;
  /// the request may be sent again.
  ///
  /// ```swift
  /// if error.code == .serverBusy { try await Task.sleep(for: .milliseconds(10)) }
  /// ```
  public static let serverBusy = RunLoopError.Code("serverBusy")
  /// The server's consumer ended (its task was cancelled or left its loop) before the
  /// request was answered; the server stopped.
  ///
  /// ```swift
  /// if error.code == .serverStopped { print("the service went away") }
  /// ```
  public static let serverStopped = RunLoopError.Code("serverStopped")
  /// The server's consumer released the request without replying.
  ///
  /// ```swift
  /// if error.code == .requestDropped { print("the server ignored the request") }
  /// ```
  public static let requestDropped = RunLoopError.Code("requestDropped")
}
