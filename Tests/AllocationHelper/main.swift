// Counts what executor threads allocate while two actors, each pinned to its own executor,
// call each other: every hop is one job enqueued on the other executor (from this one's
// thread) and run there. Two pairs run the same rally: actors on two run loops, and actors
// on two bare executors (a thread, a fixed ring of jobs under a mutex, a semaphore) that
// allocate nothing of their own. Whatever the runtime allocates per hop shows in both; the
// difference is the loops' own cost. Prints `hops:<n> loops:<count> bare:<count>`.
import CBenchSupport
import Dispatch
import Glibc
import RunLoopCore

actor Player {
  nonisolated let unownedExecutor: UnownedSerialExecutor
  private var hits = 0

  init(_ executor: UnownedSerialExecutor) {
    unownedExecutor = executor
  }

  func hit() -> Int {
    hits += 1
    return hits
  }

  /// What this actor's thread has allocated so far.
  func allocationsOfThread() -> UInt64 { cbench_thread_allocations() }

  func rally(with other: Player, hops: Int) async -> Int {
    var last = 0
    for _ in 0..<hops { last = await other.hit() }
    return last
  }
}

/// The control: a serial executor with no allocation of its own once started.
final class BareExecutor: SerialExecutor, @unchecked Sendable {
  private let capacity = 1024
  private let ring: UnsafeMutablePointer<UnownedJob?>
  private var head = 0
  private var count = 0
  private let lock = GuardedState(0)
  private let available = DispatchSemaphore(value: 0)

  init() {
    ring = .allocate(capacity: capacity)
    ring.initialize(repeating: nil, count: capacity)
    let thread = RunLoopThread(name: "bare") { [self] _ in drain() }
    do { try thread.start() } catch { fatalError("cannot start the bare executor: \(error)") }
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let unowned = UnownedJob(job)
    lock.withLock { _ in
      precondition(count < capacity, "bare executor ring full")
      ring[(head + count) % capacity] = unowned
      count += 1
    }
    available.signal()
  }

  private func drain() {
    while true {
      available.wait()
      let job = lock.withLock { _ -> UnownedJob in
        let job = ring[head]!
        head = (head + 1) % capacity
        count -= 1
        return job
      }
      job.runSynchronously(on: asUnownedSerialExecutor())
    }
  }
}

func startLoop(_ name: String) -> RunLoopThread {
  let ready = DispatchSemaphore(value: 0)
  let thread = RunLoopThread(name: name) { thread in
    try thread.runLoop.add(CustomInputSource {}, mode: .default)
    ready.signal()
    while !thread.isCancelled {
      _ = try thread.runLoop.run(mode: .default, timeout: .seconds(60))
    }
  }
  do { try thread.start() } catch { fatalError("cannot start \(name): \(error)") }
  ready.wait()
  return thread
}

func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
  let result = GuardedState<T?>(nil)
  let done = DispatchSemaphore(value: 0)
  Task.detached {
    let value = await body()
    result.withLock { $0 = value }
    done.signal()
  }
  done.wait()
  return result.withLock { $0! }
}

/// The allocations both players' threads made during `hops` hops, after a warm-up.
func allocationsDuringRally(_ serve: Player, _ answer: Player, hops: Int) -> UInt64 {
  blocking {
    // Warm-up: queues grow to their working size, the task allocator settles.
    _ = await serve.rally(with: answer, hops: 1_000)
    let before = await serve.allocationsOfThread() + answer.allocationsOfThread()
    _ = await serve.rally(with: answer, hops: hops)
    let after = await serve.allocationsOfThread() + answer.allocationsOfThread()
    return after - before
  }
}

let hops = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 10_000 : 10_000
let first = startLoop("first")
let second = startLoop("second")
let onLoops = allocationsDuringRally(
  Player(first.runLoop.asUnownedSerialExecutor()),
  Player(second.runLoop.asUnownedSerialExecutor()), hops: hops)
let bareFirst = BareExecutor()
let bareSecond = BareExecutor()
let onBare = allocationsDuringRally(
  Player(bareFirst.asUnownedSerialExecutor()), Player(bareSecond.asUnownedSerialExecutor()),
  hops: hops)
print("hops:\(hops) loops:\(onLoops) bare:\(onBare)")
exit(0)
