import Dispatch
import RunLoopCore

/// Awaitable requests.
extension NamedPort {
  /// Sends a request and suspends the calling task until its reply comes. The blocking
  /// exchange runs on a serial Dispatch queue of its own, which gets a thread of its own:
  /// never one of Dispatch's default global threads, which Swift's global executor runs
  /// tasks on (on Linux), so waiting clients cannot starve the tasks that would answer
  /// them. In async code a bare `port.request(...)` means this one. It throws what
  /// the blocking ``request(msgid:data:sendTimeout:receiveTimeout:)`` throws, including the
  /// failures of a server that serves a requests sequence (`serverBusy`, `serverStopped`,
  /// `requestDropped`). Cancelling the task does not cut the exchange short: it ends within
  /// its timeouts, as the blocking call does.
  ///
  /// ```swift
  /// let reply = try await port.request(msgid: 1, data: [7], receiveTimeout: .seconds(2))
  /// ```
  public func request(
    msgid: PortMessageID, data: [UInt8] = [], sendTimeout: Duration = .seconds(1),
    receiveTimeout: Duration = .seconds(5)
  ) async throws(RunLoopError) -> [UInt8] {
    let outcome = await withCheckedContinuation {
      (continuation: CheckedContinuation<Result<[UInt8], RunLoopError>, Never>) in
      DispatchQueue(label: "named-port.request").async {
        continuation.resume(
          returning: Result { () throws(RunLoopError) -> [UInt8] in
            try self.request(
              msgid: msgid, data: data, sendTimeout: sendTimeout, receiveTimeout: receiveTimeout)
          })
      }
    }
    return try outcome.get()
  }
}
