import Dispatch
import Glibc
import RunLoopCore
import Synchronization

extension Scenarios {
  /// What a batch of blocks did: their order of starting, how many ran at once at most, and
  /// the threads they ran on (by `pthread_self`, distinct among threads alive together).
  struct BatchRecord: Sendable {
    var started: [Int] = []
    var running = 0
    var peak = 0
    var threads: Set<UInt> = []
  }

  /// Runs block `index` of a batch: records its start and its thread, waits `hold` (blocked,
  /// as a block that waits for a disk or a lock is), then records its end.
  static func runBlock(_ index: Int, hold: Duration, into record: GuardedState<BatchRecord>) {
    record.withLock {
      $0.started.append(index)
      $0.running += 1
      $0.peak = max($0.peak, $0.running)
      $0.threads.insert(UInt(pthread_self()))
    }
    usleep(UInt32(DurationArgument(hold).seconds * 1_000_000))
    record.withLock { $0.running -= 1 }
  }

  /// The number of processors this process may run on.
  static var processors: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

  static let queues = Scenario(
    name: "queues",
    title: "A serial queue, a concurrent queue and global(), beside a thread with a run loop",
    guide: "Workbook: DispatchQueue main, global(), serial and concurrent; Alternatives to Threads",
    article: "RunLoopsAndSwiftConcurrency.md, A serial queue and a thread with a loop"
  ) { narration in
    let count = 6
    let hold: Duration = .milliseconds(30)
    narration.say("\(count) blocks of \(milliseconds(hold)) each (blocked waiting, as on a disk),")
    narration.say("submitted in order to each of four places; \(processors) processors here.")

    func batch(_ name: String, _ submit: (@escaping @Sendable () -> Void) -> Void, wait: () -> Void)
      -> BatchRecord
    {
      let record = GuardedState(BatchRecord())
      for index in 0..<count { submit { runBlock(index, hold: hold, into: record) } }
      wait()
      let done = record.withLock { $0 }
      narration.event(
        "\(name): order \(done.started.map(String.init).joined(separator: " ")), at most "
          + "\(done.peak) at once, on \(done.threads.count) thread(s)", at: .outside)
      return done
    }

    let group = DispatchGroup()
    let serialQueue = DispatchQueue(label: "demo.serial")
    let serial = batch("serial queue", { serialQueue.async(group: group, execute: $0) }) {
      group.wait()
    }
    narration.expect(
      serial.peak == 1 && serial.started == Array(0..<count),
      "the serial queue ran one block at a time, in the order submitted")

    let concurrentQueue = DispatchQueue(label: "demo.concurrent", attributes: .concurrent)
    let concurrent = batch(
      "concurrent queue", { concurrentQueue.async(group: group, execute: $0) }
    ) { group.wait() }
    let global = batch("global()", { DispatchQueue.global().async(group: group, execute: $0) }) {
      group.wait()
    }
    narration.expect(
      processors < 2 || (concurrent.peak >= 2 && global.peak >= 2 && global.threads.count >= 2),
      "the concurrent queue and global() ran blocks side by side, on threads of Dispatch's pool")

    let worker = RunLoopThread(name: "worker") { thread in
      try thread.runLoop.add(keepAlive("keep-alive"), mode: .default)
      while !thread.isCancelled { try thread.runLoop.run(mode: .default, timeout: .seconds(1)) }
    }
    try worker.start()
    let loopThread = batch(
      "loop thread 'worker'",
      { block in worker.runLoop.perform(name: "block", block) }
    ) { try? worker.runLoop.performAndWait(name: "last", deadline: .now + .seconds(5)) {} }
    worker.cancel()
    worker.runLoop.wakeUp()
    try worker.join()
    narration.expect(
      loopThread.peak == 1 && loopThread.started == Array(0..<count)
        && loopThread.threads.count == 1,
      "the loop thread ran them like the serial queue, and always on the same thread")
    narration.say("A serial queue is FIFO on some pool thread; a loop thread is FIFO on one")
    narration.say("thread you name, between its timers and ports, in the modes you choose.")
  }
}
