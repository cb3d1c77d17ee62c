import RunLoopCore
import RunLoopTestSupport
import RunLoopTimers
import Testing

/// `LoopTimer.scheduled` adds to the calling thread's loop. From a task on the concurrency
/// pool that loop never runs, so the call throws instead of scheduling a timer that would
/// never fire; from a task on a loop it schedules as usual.
@Suite("Scheduled timers from tasks")
struct ScheduledFromATaskTests {
  @Test func scheduledFromATaskOnThePoolThrowsInvalidState() async {
    #expect(throws: RunLoopError.invalidState("")) {
      try LoopTimer.scheduled(after: .zero) { _ in }
    }
  }

  @Test func scheduledFromATaskOnALoopFiresThere() async throws {
    let worker = try startLoopThread(name: "scheduled-task")
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    let firedOnLoop = try await withTaskExecutorPreference(loop) {
      try await withCheckedThrowingContinuation { continuation in
        do {
          try LoopTimer.scheduled(after: .milliseconds(1)) { _ in
            continuation.resume(returning: loop.isCurrent)
          }
        } catch {
          continuation.resume(throwing: error)
        }
      }
    }
    #expect(firedOnLoop)
  }
}
