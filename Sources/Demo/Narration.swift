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
  /// events it belongs to, and the calling thread. The step is the one the calling thread's
  /// loop reports (``EventRunLoop/currentStep``) unless the caller gives one: a line printed
  /// outside any run (``SequenceStep/outside``) or from a thread with no loop running has no
  /// step to read, and is blank when the caller does not say.
  func event(_ text: String, at step: SequenceStep? = nil) {
    let step = step ?? Self.reportedStep()
    let elapsed = ContinuousClock.now - started
    let thread = RunLoopThread.current?.name ?? "main"
    let column = (step?.description ?? "").padding(toLength: 7)
    events.withLock { $0.append(text) }
    StandardStreams.out(
      "    \(milliseconds(elapsed).leftPadded(to: 9, with: " "))  \(column)  \(thread): \(text)")
  }

  /// The step the calling thread's loop is at, when the thread is a loop thread of this
  /// package or the main thread and its loop is running. Other threads are not asked for
  /// ``EventRunLoop/current``, which would make them a loop.
  private static func reportedStep() -> SequenceStep? {
    let loop = RunLoopThread.current?.runLoop ?? (EventRunLoop.main.isCurrent ? .main : nil)
    return loop?.currentStep.map { .step($0) }
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
