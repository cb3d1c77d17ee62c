/// Why a run of a loop in one mode returned (CoreFoundation's `CFRunLoopRunResult`).
///
/// ```swift
/// switch try loop.run(mode: .default, timeout: .seconds(1)) {
/// case .handledSource: print("one source ran")
/// case .timedOut: print("nothing more within a second")
/// case .stopped: print("someone called stop()")
/// case .finished: print("the mode has nothing left to watch")
/// }
/// ```
public enum RunResult: String, Sendable, Hashable, CustomStringConvertible {
  /// The mode has no sources and no timers (and no pending performs): there is nothing to
  /// wait for. An empty mode returns this before any observer is told anything.
  case finished
  /// ``EventRunLoop/stop()`` ended the run.
  case stopped
  /// The run's timeout passed.
  case timedOut
  /// A source was handled and the run was asked to return after one.
  case handledSource

  /// The case name.
  ///
  /// ```swift
  /// "\(RunResult.timedOut)"  // "timedOut"
  /// ```
  public var description: String { rawValue }
}
