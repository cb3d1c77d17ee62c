import Dispatch
import Glibc
import RunLoopCore
import RunLoopTimers

extension Scenarios {
  static let threadExplosion = Scenario(
    name: "thread-explosion",
    title: "Thread explosion: a thread per waiting task, against loop threads that wait for all",
    guide: "Workbook: Avoiding Excessive Thread Creation; Thread Costs (Table 2-1)",
    article: "ThreadManagement.md, What a thread costs (Table 2-1)"
  ) { narration in
    let count = 32
    let hold: Duration = .milliseconds(100)
    narration.say("\(count) tasks that each wait \(milliseconds(hold)) (for a reply, a disk).")

    narration.say("One thread per task: every waiting task holds a thread and its stack.")
    let perTask = GuardedState(BatchRecord())
    let threads = (0..<count).map { index in
      RunLoopThread(name: "task-\(index)") { _ in runBlock(index, hold: hold, into: perTask) }
    }
    for thread in threads { try thread.start() }
    for thread in threads { try thread.join() }
    let each = perTask.withLock { $0 }
    narration.event(
      "a thread per task: \(each.peak) waiting at once on \(each.threads.count) threads",
      at: .outside)
    narration.expect(
      each.threads.count == count, "\(count) tasks made \(count) threads, one stack each")

    narration.say("The same blocking tasks on global(): Dispatch adds threads when its threads")
    narration.say("block, a few at a time, so the tasks queue behind the blocked ones.")
    let pooled = GuardedState(BatchRecord())
    let group = DispatchGroup()
    let start = ContinuousClock.now
    for index in 0..<count {
      DispatchQueue.global().async(group: group) { runBlock(index, hold: hold, into: pooled) }
    }
    group.wait()
    let pool = pooled.withLock { $0 }
    narration.event(
      "global(): \(pool.peak) at once on \(pool.threads.count) threads, all done after "
        + milliseconds(ContinuousClock.now - start), at: .outside)
    narration.expect(
      pool.started.count == count && pool.threads.count < count,
      "global() ran all \(count) on fewer threads than tasks, so some waited behind others")

    narration.say("Two loop threads: each task is a timer, so the waiting is the loop's, not")
    narration.say("a blocked thread's; both threads sleep in epoll until the timers are due.")
    let loops = try RunLoopGroup(threadCount: 2, name: "loops")
    let served = GuardedState(BatchRecord())
    let finished = DispatchSemaphore(value: 0)
    let due = ContinuousClock.now + hold
    for index in 0..<count {
      let loop = loops.next()
      loop.perform(name: "schedule") {
        let timer = try? LoopTimer(fireAt: due, name: "task-\(index)") { _ in
          served.withLock {
            $0.started.append(index)
            $0.threads.insert(UInt(pthread_self()))
          }
          finished.signal()
        }
        if let timer { try? loop.add(timer, mode: .default) }
      }
    }
    for _ in 0..<count { finished.wait() }
    loops.stop()
    for thread in loops.threads { try thread.join() }
    let grouped = served.withLock { $0 }
    narration.event(
      "two loop threads: \(grouped.started.count) tasks on \(grouped.threads.count) threads",
      at: .outside)
    narration.expect(
      grouped.started.count == count && grouped.threads.count <= 2,
      "two loop threads served all \(count) waits: the threads a process needs do not grow"
        + " with the tasks that wait")
  }
}
