// Counts what an executor thread allocates while two actors call each other: every hop is
// one job enqueued on the other actor's executor, from this one's thread, and run there.
//
// The actor on a bare executor (a thread, a fixed ring of jobs under a mutex, a semaphore;
// nothing of its own allocates) serves an actor on a run loop, and the bare thread is counted:
// it runs the runtime's part of each hop and calls the loop's enqueue path, nothing else. The
// same rally between two bare executors gives the runtime's part alone. Prints
// `hops:<n> bare-to-loop:<count> bare-to-bare:<count> loop-thread:<count>`; the loop thread's
// own count includes its passes, which unoptimized builds allocate in.
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

/// The allocations the threads of `counted` made during `hops` hops, after a warm-up.
func allocationsDuringRally(
  _ serve: Player, _ answer: Player, hops: Int, counted: [Player]
) -> UInt64 {
  blocking {
    // Warm-up: queues grow to their working size, the task allocator settles.
    _ = await serve.rally(with: answer, hops: 1_000)
    var before: UInt64 = 0
    for player in counted { before += await player.allocationsOfThread() }
    _ = await serve.rally(with: answer, hops: hops)
    var after: UInt64 = 0
    for player in counted { after += await player.allocationsOfThread() }
    return after - before
  }
}

/// Counts what this thread allocates queueing perform requests on, and signalling a source of,
/// another thread's loop, first while nothing traces call-outs, then while an instrument of
/// that loop wants them (when queued work records its cause). Prints `requests:<n>
/// perform-untraced:<a> perform-traced:<b> signal-untraced:<c> signal-traced:<d>`.
final class CalloutCounter: RunLoopInstrument, Sendable {
  let interests: InstrumentInterests = .callouts
  let count = GuardedState(0)
  func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo) {
    count.withLock { $0 += 1 }
  }
}

func countCauseAllocations(requests: Int) -> String {
  let target = startLoop("target")
  let source = CustomInputSource(name: "signalled") {}
  do { try target.runLoop.add(source, mode: .default) } catch { fatalError("\(error)") }
  func performs() -> UInt64 {
    let before = cbench_thread_allocations()
    for _ in 0..<requests { target.runLoop.perform(name: "request") {} }
    return cbench_thread_allocations() - before
  }
  // Each signal waits for its perform, so that every one is a first signal (the one whose
  // cause a traced source records).
  func signals() -> UInt64 {
    var allocations: UInt64 = 0
    for _ in 0..<requests {
      let before = cbench_thread_allocations()
      source.signal()
      allocations += cbench_thread_allocations() - before
      target.runLoop.wakeUp()
      while source.isSignalled { sched_yield() }
    }
    return allocations
  }
  _ = performs()
  _ = signals()
  let untraced = (performs(), signals())
  let counter = CalloutCounter()
  target.runLoop.addInstrument(counter)
  let traced = (performs(), signals())
  return "requests:\(requests) perform-untraced:\(untraced.0) perform-traced:\(traced.0) "
    + "signal-untraced:\(untraced.1) signal-traced:\(traced.1)"
}

if CommandLine.arguments.count > 2, CommandLine.arguments[1] == "causes" {
  print(countCauseAllocations(requests: Int(CommandLine.arguments[2]) ?? 1000))
  exit(0)
}

let hops = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 10_000 : 10_000
let loopThread = startLoop("loop")
let bareServe = Player(BareExecutor().asUnownedSerialExecutor())
let loopAnswer = Player(loopThread.runLoop.asUnownedSerialExecutor())
let bareToLoop = allocationsDuringRally(bareServe, loopAnswer, hops: hops, counted: [bareServe])
let loopOwn = allocationsDuringRally(bareServe, loopAnswer, hops: hops, counted: [loopAnswer])
let otherServe = Player(BareExecutor().asUnownedSerialExecutor())
let otherAnswer = Player(BareExecutor().asUnownedSerialExecutor())
let bareToBare = allocationsDuringRally(otherServe, otherAnswer, hops: hops, counted: [otherServe])
print("hops:\(hops) bare-to-loop:\(bareToLoop) bare-to-bare:\(bareToBare) loop-thread:\(loopOwn)")
exit(0)
