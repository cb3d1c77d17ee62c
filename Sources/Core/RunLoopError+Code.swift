extension RunLoopError {
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
    /// A thread's run loop could not be created: the system refused one of its descriptors
    /// (`EMFILE`, `ENFILE`, `ENOMEM`); the message names the call, and
    /// ``RunLoopError/systemError`` has its `errno`.
    ///
    /// ```swift
    /// if error.code == .loopCreationFailed { print("out of descriptors:", error.message) }
    /// ```
    public static let loopCreationFailed = Code("loopCreationFailed")
  }
}
