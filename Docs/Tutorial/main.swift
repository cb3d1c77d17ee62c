// runloop-tutorial: runs one step of the tutorial "Build a traced worker service"
// (Docs/RunLoopGuide.docc/Tutorials). Each step's code is a file of the catalog, linked here so
// that the package builds every step: `swift run runloop-tutorial 3` runs step 3.

import Dispatch
import Glibc
import RunLoopCore

/// Runs an async step in a task; this thread waits for it (no task needs it).
func waitFor(_ step: @escaping @Sendable () async throws -> Void) throws {
  let failure = GuardedState<(any Error)?>(nil)
  let done = DispatchSemaphore(value: 0)
  Task {
    do { try await step() } catch { failure.withLock { $0 = error } }
    done.signal()
  }
  done.wait()
  if let error = failure.withLock({ $0 }) { throw error }
}

let steps: [() throws -> Void] = [
  workerServiceStep1, workerServiceStep2, workerServiceStep3, workerServiceStep4,
  workerServiceStep5, workerServiceStep6, workerServiceStep7, workerServiceStep8,
  { try waitFor(workerServiceStep9) },
]

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 1, let step = Int(arguments.first!), steps.indices.contains(step - 1)
else {
  print("usage: runloop-tutorial STEP   (STEP is 1 to \(steps.count))")
  exit(2)
}
do {
  try steps[step - 1]()
} catch {
  print("step \(step) failed: \(error)")
  exit(1)
}
