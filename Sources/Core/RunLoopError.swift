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
  /// The kind of failure. Modules define more codes in extensions.
  ///
  /// ```swift
  /// let retryable: Set<RunLoopError.Code> = [.timedOut, .cancelled]
  /// if retryable.contains(error.code) { retry() }
  /// ```
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// A short, stable identifier such as `notOwningThread`.
    ///
    /// ```swift
    /// RunLoopError.Code.timedOut.identifier  // "timedOut"
    /// ```
    public let identifier: String

    /// Creates a code; modules use this to add their own.
    ///
    /// ```swift
    /// extension RunLoopError.Code {
    ///   static let queueFull = RunLoopError.Code("queueFull")
    /// }
    /// ```
    public init(_ identifier: String) {
      self.identifier = identifier
    }

    /// The identifier.
    ///
    /// ```swift
    /// "\(RunLoopError.Code.cancelled)"  // "cancelled"
    /// ```
    public var description: String { identifier }

    /// A run method was called on a loop from a thread that does not own it.
    ///
    /// ```swift
    /// if error.code == .notOwningThread { loop.perform { retry() } }
    /// ```
    public static let notOwningThread = Code("notOwningThread")
    /// The object (source, request, port, timer...) was invalidated.
    ///
    /// ```swift
    /// if error.code == .invalidated { print("the source is gone") }
    /// ```
    public static let invalidated = Code("invalidated")
    /// An argument is outside what the call accepts (a NaN timeout, running in `.common`).
    ///
    /// ```swift
    /// if error.code == .invalidArgument { print("bad input:", error.message) }
    /// ```
    public static let invalidArgument = Code("invalidArgument")
    /// The loop's thread has exited, so the loop can no longer run anything.
    ///
    /// ```swift
    /// if error.code == .loopThreadExited { print("the worker's thread is gone") }
    /// ```
    public static let loopThreadExited = Code("loopThreadExited")
    /// A system call failed; the message names it and its `errno`.
    ///
    /// ```swift
    /// if error.code == .systemCallFailed { print("errno", error.systemError ?? 0) }
    /// ```
    public static let systemCallFailed = Code("systemCallFailed")
    /// A waiting call gave up at its deadline.
    ///
    /// ```swift
    /// if error.code == .timedOut { print("the worker did not answer in time") }
    /// ```
    public static let timedOut = Code("timedOut")
    /// A perform request was cancelled before it ran.
    ///
    /// ```swift
    /// if error.code == .cancelled { print("the request was cancelled before it ran") }
    /// ```
    public static let cancelled = Code("cancelled")
    /// The object is already in use where it cannot be used twice (a descriptor watched
    /// twice on one loop, a thread started twice).
    ///
    /// ```swift
    /// if error.code == .alreadyInUse { print("the descriptor is already watched") }
    /// ```
    public static let alreadyInUse = Code("alreadyInUse")
    /// The operation does not apply in the object's current state (joining a detached thread).
    ///
    /// ```swift
    /// if error.code == .invalidState { print(error.message) }  // e.g. a second join()
    /// ```
    public static let invalidState = Code("invalidState")
  }

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

  /// Creates an error. Prefer the factories (``notOwningThread(_:)`` and friends).
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
