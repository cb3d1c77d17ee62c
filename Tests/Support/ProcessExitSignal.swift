import Dispatch
import Foundation
import RunLoopCore

/// Tells when a Foundation `Process` has ended, without `waitUntilExit()`.
///
/// `waitUntilExit()` spins the calling thread's CFRunLoop until it sees the process end. In
/// this suite one such call stayed blocked in that run loop's `ppoll` for minutes after its
/// process had been killed, and took the whole test run with it. The termination handler
/// is called on Foundation's own monitoring thread and needs nothing from the caller's run
/// loop, so the tests wait on it, with a deadline.
///
/// ```swift
/// let process = Process()
/// let ended = ProcessExitSignal(process)  // before run()
/// try process.run()
/// #expect(ended.wait(timeout: .seconds(30)))
/// ```
public final class ProcessExitSignal: Sendable {
  private let exited = DispatchSemaphore(value: 0)
  private let seen = GuardedState(false)

  /// Installs the termination handler of `process`; call it before `process.run()`.
  public init(_ process: Process) {
    process.terminationHandler = { [exited] _ in exited.signal() }
  }

  /// Waits until the process has ended or `timeout` has passed; returns whether it ended.
  /// Once it has returned `true`, it returns `true` at once.
  public func wait(timeout: Duration) -> Bool {
    if seen.withLock({ $0 }) { return true }
    let nanoseconds = max(0, Int(timeout.components.seconds) * 1_000_000_000)
    guard exited.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else {
      return false
    }
    seen.withLock { $0 = true }
    return true
  }

  /// Waits up to `timeout` for the end; then kills the process with `SIGKILL` and waits up
  /// to ten seconds more. Returns whether the process was seen to end.
  public func waitOrKill(_ process: Process, timeout: Duration) -> Bool {
    if wait(timeout: timeout) { return true }
    kill(process.processIdentifier, SIGKILL)
    return wait(timeout: .seconds(10))
  }
}
