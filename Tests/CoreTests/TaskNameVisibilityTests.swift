import Dispatch
import RunLoopCore
import Testing

/// What an executor sees of a job's task name, at enqueue and around the run: the reason a
/// job's call-out is named after the task's id (RunLoopsAndSwiftConcurrency.md, "Why a job's
/// call-out does not carry its task's name"). If a Swift release makes the name visible
/// there, this fails, and the loop's job call-outs should use it.
private final class NameProbe: SerialExecutor, TaskExecutor, @unchecked Sendable {
  private let queue = DispatchQueue(label: "name-probe")
  let seen = GuardedState<[String?]>([])

  func enqueue(_ job: consuming ExecutorJob) {
    seen.withLock { $0.append(Task.name) }
    let job = UnownedJob(job)
    queue.async {
      self.seen.withLock { $0.append(Task.name) }
      job.runSynchronously(
        isolatedTo: self.asUnownedSerialExecutor(), taskExecutor: self.asUnownedTaskExecutor())
      self.seen.withLock { $0.append(Task.name) }
    }
  }
}

@Suite("What an executor sees of a task's name")
struct TaskNameVisibilityTests {
  @Test func aNamedTasksNameIsInvisibleToItsExecutorAtEnqueueAndAroundTheRun() async {
    let probe = NameProbe()
    let inside = await Task(name: "named-job", executorPreference: probe) { Task.name }.value
    // The task sees its own name; its executor never does (at enqueue, the current task is
    // the one that enqueued, if any).
    #expect(inside == "named-job")
    let seen = probe.seen.withLock { $0 }
    // The enqueue and the moment before the run (the moment after may come later).
    #expect(seen.count >= 2)
    #expect(!seen.contains("named-job"))
  }
}
