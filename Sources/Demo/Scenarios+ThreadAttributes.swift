import Glibc
import RunLoopCore

extension Scenarios {
  /// The kernel's name of thread `tid` of this process (`/proc/self/task/TID/comm`).
  static func kernelThreadName(_ tid: pid_t) -> String {
    guard let file = fopen("/proc/self/task/\(tid)/comm", "r") else { return "?" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 64)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "?" }
    let bytes = buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }
    return String(decoding: bytes, as: UTF8.self)
  }

  static let threadAttributes = Scenario(
    name: "thread-attributes",
    title: "Thread attributes: name, stack size, priority, detached; what a thread costs",
    guide: "Thread Management > Configuring Thread Attributes, Thread Costs (Table 2-1)",
    article: "ThreadManagement.md, Creating and starting a thread"
  ) { narration in
    narration.say("1. A thread with a long name, a 256 KiB stack and nice 10:")
    let seen = GuardedState<(name: String, stack: Int, nice: Int32)>(("", 0, 0))
    let worker = RunLoopThread(
      name: "attributes-demo-thread", stackSize: 256 * 1024, priority: .nice(10)
    ) { thread in
      let tid = thread.threadID ?? 0
      errno = 0
      let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(tid))
      seen.withLock { $0 = (kernelThreadName(tid), RunLoopThread.currentStackSize, nice) }
      narration.event(
        "kernel name '\(kernelThreadName(tid))', stack \(RunLoopThread.currentStackSize / 1024)"
          + " KiB, nice \(nice)", at: .outside)
    }
    try worker.start()
    try worker.join()
    let (name, stack, nice) = seen.withLock { $0 }
    narration.expect(
      name == "attributes-demo", "Linux keeps the first 15 bytes of the name: '\(name)'")
    narration.expect(stack == 256 * 1024, "the stack is the size asked for (\(stack) bytes)")
    narration.expect(nice == 10, "the thread runs at nice 10, applied before its entry ran")

    narration.say("2. A stack below PTHREAD_STACK_MIN is refused before any thread exists:")
    let tiny = RunLoopThread(name: "tiny", stackSize: 1024) { _ in }
    var refused: RunLoopError?
    do { try tiny.start() } catch { refused = error as? RunLoopError }
    narration.expect(
      refused?.code == .invalidArgument,
      "start() threw \(refused.map { "\($0.code)" } ?? "nothing")")

    narration.say("3. A detached thread cleans up after itself and cannot be joined:")
    let ran = GuardedState(false)
    let detached = RunLoopThread(name: "detached", detached: true) { _ in
      ran.withLock { $0 = true }
    }
    try detached.start()
    var joinError: RunLoopError?
    do { try detached.join() } catch { joinError = error as? RunLoopError }
    narration.expect(joinError?.code == .invalidState, "join() threw invalidState")
    let deadline = ContinuousClock.now + .seconds(2)
    while !ran.withLock({ $0 }) && ContinuousClock.now < deadline { usleep(1_000) }
    narration.expect(ran.withLock { $0 }, "its entry ran all the same")

    narration.say("4. Table 2-1, thread creation time: start and join 200 threads with loops:")
    let count = 200
    let began = ContinuousClock.now
    for index in 0..<count {
      let thread = RunLoopThread(name: "cost-\(index)") { _ in }
      try thread.start()
      try thread.join()
    }
    let each = DurationArgument((ContinuousClock.now - began) / count).seconds * 1_000_000
    narration.event(
      "\(one(each)) µs a thread, created, run and joined (the guide's figure: about 90 µs to"
        + " create one on macOS)", at: .outside)
    narration.expect(each > 0, "200 threads were created and joined one after the other")
  }
}
