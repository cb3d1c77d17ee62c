import Glibc

/// An error from the run-loop framework: a code to match on and a message for people.
///
/// Errors are compared by code only, so a test or a `catch` can match the kind of failure
/// without caring about the wording (in the manner of swift-service-lifecycle's
/// `ServiceGroupError`). Other modules add their own codes.
///
/// ```swift
/// do {
///   _ = try otherThreadsLoop.run(mode: .default, timeout: .zero)
/// } catch let error where error.code == .notOwningThread {
///   print(error.message)
/// }
/// ```
public struct RunLoopError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The kind of failure.
  ///
  /// ```swift
  /// if error.code == .timedOut { retry() }
  /// ```
  public let code: Code
  /// What happened, for people.
  ///
  /// ```swift
  /// print("run loop error:", error.message)
  /// ```
  public let message: String
  /// The `errno` of a failed system call, when there is one.
  ///
  /// ```swift
  /// if let code = error.systemError, code == EINTR { retry() }
  /// ```
  public let systemError: Int32?

  /// Creates an error of any ``Code``, including a code of your own (``Code/init(_:)``).
  ///
  /// ```swift
  /// let error = RunLoopError(code: .invalidArgument, message: "interval must be positive")
  /// ```
  public init(code: Code, message: String, systemError: Int32? = nil) {
    self.code = code
    self.message = message
    self.systemError = systemError
  }

  /// `code: message`.
  ///
  /// ```swift
  /// "\(RunLoopError(code: .timedOut, message: "no reply"))"  // "timedOut: no reply"
  /// ```
  public var description: String { "\(code): \(message)" }

  /// Errors are equal when their codes are.
  ///
  /// ```swift
  /// RunLoopError(code: .timedOut, message: "a") == RunLoopError(code: .timedOut, message: "b")
  /// ```
  public static func == (lhs: RunLoopError, rhs: RunLoopError) -> Bool { lhs.code == rhs.code }

  /// Hashes the code only, to agree with `==`.
  ///
  /// ```swift
  /// let seen: Set = [error, RunLoopError(code: error.code, message: "again")]  // one element
  /// ```
  public func hash(into hasher: inout Hasher) { hasher.combine(code) }

  // The factories below are what the package's modules throw with: a user matches on
  // `code` and makes an error of a code of its own with `init(code:message:systemError:)`.

  /// A run method was called from a thread that does not own the loop.
  ///
  /// ```swift
  /// guard loop.isCurrent else { throw RunLoopError.notOwningThread("not the loop's thread") }
  /// ```
  package static func notOwningThread(_ message: String) -> RunLoopError {
    RunLoopError(code: .notOwningThread, message: message)
  }

  /// The object was invalidated.
  ///
  /// ```swift
  /// guard source.isValid else { throw RunLoopError.invalidated("the source was invalidated") }
  /// ```
  package static func invalidated(_ message: String) -> RunLoopError {
    RunLoopError(code: .invalidated, message: message)
  }

  /// An argument is out of range.
  ///
  /// ```swift
  /// guard interval > .zero else { throw RunLoopError.invalidArgument("interval <= 0") }
  /// ```
  package static func invalidArgument(_ message: String) -> RunLoopError {
    RunLoopError(code: .invalidArgument, message: message)
  }

  /// The loop's thread has exited.
  ///
  /// ```swift
  /// guard !loop.threadHasExited else { throw RunLoopError.loopThreadExited("worker gone") }
  /// ```
  package static func loopThreadExited(_ message: String) -> RunLoopError {
    RunLoopError(code: .loopThreadExited, message: message)
  }

  /// A system call failed with `errno`.
  ///
  /// ```swift
  /// if epoll_create1(0) < 0 { throw RunLoopError.systemCall("epoll_create1", errno: errno) }
  /// ```
  package static func systemCall(_ name: String, errno code: Int32) -> RunLoopError {
    let reason = String(cString: strerror(code))
    return RunLoopError(
      code: .systemCallFailed, message: "\(name) failed: \(reason) (errno \(code))",
      systemError: code)
  }

  /// A waiting call reached its deadline.
  ///
  /// ```swift
  /// throw RunLoopError.timedOut("no reply within \(timeout)")
  /// ```
  package static func timedOut(_ message: String) -> RunLoopError {
    RunLoopError(code: .timedOut, message: message)
  }

  /// A request was cancelled before it ran.
  ///
  /// ```swift
  /// throw RunLoopError.cancelled("request '\(request.name)' was cancelled")
  /// ```
  package static func cancelled(_ message: String) -> RunLoopError {
    RunLoopError(code: .cancelled, message: message)
  }

  /// The object is already in use.
  ///
  /// ```swift
  /// throw RunLoopError.alreadyInUse("descriptor \(fd) is already watched")
  /// ```
  package static func alreadyInUse(_ message: String) -> RunLoopError {
    RunLoopError(code: .alreadyInUse, message: message)
  }

  /// The operation does not apply in the current state.
  ///
  /// ```swift
  /// throw RunLoopError.invalidState("thread '\(name)' was already started")
  /// ```
  package static func invalidState(_ message: String) -> RunLoopError {
    RunLoopError(code: .invalidState, message: message)
  }
}
