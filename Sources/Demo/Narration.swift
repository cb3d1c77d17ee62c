import RunLoopCore

/// What a scenario prints, and the expectations it checks: a scenario is a short program that
/// explains a concept and verifies that the loop behaved as explained. A failed expectation
/// is printed and makes the command exit 1.
final class Narration: Sendable {
  private let started = ContinuousClock.now
  // Guarded by its own lock: the expectations that failed.
  private let failures = GuardedState<[String]>([])
  // Guarded by its own lock: the text of every event line, in the order printed.
  private let events = GuardedState<[String]>([])

  /// Prints a line of explanation.
  func say(_ text: String) {
    StandardStreams.out("  \(text)")
  }

  /// Prints an event with the time since the scenario began, the step of the sequence of
  /// events it belongs to (blank when the caller does not say), and the calling thread.
  func event(_ text: String, at step: SequenceStep? = nil) {
    let elapsed = ContinuousClock.now - started
    let thread = RunLoopThread.current?.name ?? "main"
    let column = (step?.description ?? "").padding(toLength: 7)
    events.withLock { $0.append(text) }
    StandardStreams.out(
      "    \(milliseconds(elapsed).leftPadded(to: 9, with: " "))  \(column)  \(thread): \(text)")
  }

  /// Records whether `condition` holds, printing `claim` with a check mark or a cross.
  func expect(_ condition: Bool, _ claim: String) {
    StandardStreams.out("  \(condition ? "✓" : "✗") \(claim)")
    if !condition { failures.withLock { $0.append(claim) } }
  }

  /// The expectations that failed.
  var failed: [String] { failures.withLock { $0 } }

  /// The text of every event line so far, in the order printed.
  var eventLines: [String] { events.withLock { $0 } }
}
