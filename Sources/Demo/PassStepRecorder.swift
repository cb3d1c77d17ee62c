import RunLoopCore

/// Keeps, for each pass of a loop, the steps the loop reported in it: every activity's and
/// every call-out's (``/RunLoopCore/LoopPassInfo/step``), in order, with the call-outs'
/// names. A scenario reads it to say which steps a pass went through, from the loop's own
/// reports: a pass whose steps go from 3 to a port's call-out at 9, with no source fired at 4
/// and no 6, 7 or 8, found the port ready in step 5.
final class PassStepRecorder: RunLoopInstrument {
  let interests: InstrumentInterests = [.activities, .callouts]
  // Guarded by its own lock: per pass counter, the steps reported and what they were.
  private let steps = GuardedState<[UInt64: [(step: Int, what: String)]]>([:])

  func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    steps.withLock { $0[info.iteration, default: []].append((info.step, activity.name)) }
  }

  func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo) {
    steps.withLock {
      $0[info.iteration, default: []].append((info.step, "\(callout.kind) '\(callout.name)'"))
    }
  }

  /// Every pass recorded, by pass counter, each with its steps in the order reported.
  var passes: [(iteration: UInt64, steps: [(step: Int, what: String)])] {
    steps.withLock { $0 }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
  }
}
