import RunLoopCore

/// Narrates each sleep of the loops it is added to as an event line of its own, at the step
/// the loop reports for the sleep (7), with how long it lasted: the sleep is otherwise only
/// the gap between the `beforeWaiting` and `afterWaiting` lines.
final class SleepNarrator: RunLoopInstrument {
  let interests: InstrumentInterests = .sleeps
  private let narration: Narration
  private let note: String

  /// `note` follows the length on every line ("until the timer's fire date").
  init(_ narration: Narration, note: String = "") {
    self.narration = narration
    self.note = note
  }

  func runLoop(
    _ loop: EventRunLoop, didSleepFrom start: ContinuousClock.Instant,
    to end: ContinuousClock.Instant, _ info: LoopPassInfo
  ) {
    narration.event(
      "asleep for \(milliseconds(end - start))\(note.isEmpty ? "" : ", \(note)")",
      at: .step(info.step))
  }
}
