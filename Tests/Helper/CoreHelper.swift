import Dispatch
import Glibc
import RunLoopCore

/// `core-main-queue`: the main run loop, on the main thread, drains `DispatchQueue.main`
/// and runs `@MainActor` jobs while it runs in a common mode, and holds them while it runs
/// in a mode that is not common. Prints one line per event for the test to read.
func runCoreHelper(_ arguments: [String]) -> Never {
  switch arguments.first {
  case "core-main-queue":
    mainQueueScenario()
  case "core-main-queue-nested":
    nestedMainQueueScenario()
  case "core-main-queue-nested-run":
    mainQueueNestedRunScenario()
  case "core-fork-current":
    forkedChildKeepsTheForkingThreadsLoop()
  case "core-exited-owner":
    exitedOwnersHandleOnANewThread()
  case "core-run-main":
    runMainScenario()
  case "core-no-descriptors":
    loopsWithoutDescriptors()
  default:
    print("unknown core subcommand \(arguments)")
    exit(2)
  }
}

private func mainQueueScenario() -> Never {
  let loop = EventRunLoop.main
  let seen = GuardedState<[String]>([])
  @Sendable func note(_ line: String) {
    seen.withLock { $0.append(line) }
    print(line)
  }
  // 1. A non-common mode holds main-queue work.
  let privateMode: LoopMode = "private"
  do {
    try loop.add(CustomInputSource(name: "keep-private-alive") {}, mode: privateMode)
  } catch {
    print("error: \(error)")
    exit(1)
  }
  DispatchQueue.main.async { note("held-block") }
  let held = (try? loop.run(mode: privateMode, timeout: .milliseconds(100))) ?? .finished
  print("private-mode:\(held):ran=\(seen.withLock { $0.contains("held-block") })")

  // 2. The default (common) mode drains it, plus blocks from other threads and the main actor.
  DispatchQueue.global().async {
    DispatchQueue.main.async { note("from-global") }
  }
  Task { @MainActor in note("main-actor") }
  let deadline = ContinuousClock.now + .seconds(20)
  while seen.withLock({ $0.count }) < 3 && ContinuousClock.now < deadline {
    _ = try? loop.run(mode: .default, timeout: .milliseconds(50))
  }
  print("done:\(seen.withLock { $0.sorted().joined(separator: ",") })")
  exit(0)
}

/// `core-main-queue-nested`: a main-queue block that runs the main loop nested does not get
/// a later main-queue block run inside it (the main queue is serial).
private func nestedMainQueueScenario() -> Never {
  let loop = EventRunLoop.main
  let order = GuardedState<[String]>([])
  DispatchQueue.main.async {
    order.withLock { $0.append("A-start") }
    DispatchQueue.main.async { order.withLock { $0.append("B") } }
    _ = try? loop.run(mode: .default, timeout: .milliseconds(100))
    order.withLock { $0.append("A-end") }
  }
  let deadline = ContinuousClock.now + .seconds(10)
  while order.withLock({ $0.count }) < 3 && ContinuousClock.now < deadline {
    _ = try? loop.run(mode: .default, timeout: .milliseconds(50))
  }
  print("order:\(order.withLock { $0.joined(separator: ",") })")
  exit(0)
}

/// A run nested in main-queue work, with more main-queue work queued: it does not serve the
/// main queue, so it sleeps until its timeout instead of returning "handled source" at once.
private func mainQueueNestedRunScenario() -> Never {
  let loop = EventRunLoop.main
  let seen = GuardedState<[String]>([])
  do {
    try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
  } catch {
    print("error: \(error)")
    exit(1)
  }
  DispatchQueue.main.async {
    DispatchQueue.main.async { seen.withLock { $0.append("B") } }
    let result = try? loop.run(
      mode: .default, timeout: .milliseconds(50), returnAfterSourceHandled: true)
    seen.withLock { $0.append("nested:\(result.map { "\($0)" } ?? "error")") }
  }
  let deadline = ContinuousClock.now + .seconds(10)
  while seen.withLock({ $0.count }) < 2 && ContinuousClock.now < deadline {
    _ = try? loop.run(mode: .default, timeout: .milliseconds(50))
  }
  print("order:\(seen.withLock { $0.joined(separator: ",") })")
  exit(0)
}

/// `core-fork-current`: a worker thread forks. In the child, the worker's loop is still
/// current on the worker's thread (the one thread the child has), and a loop of another of
/// the parent's threads is current nowhere. Prints `parent:` and `child:` lines.
private func forkedChildKeepsTheForkingThreadsLoop() -> Never {
  let other = RunLoopThread(name: "other") { thread in
    try thread.runLoop.add(CustomInputSource(name: "keep") {}, mode: .default)
    while !thread.isCancelled {
      _ = try thread.runLoop.run(mode: .default, timeout: .milliseconds(20))
    }
  }
  let result = GuardedState<String>("")
  let worker = RunLoopThread(name: "forker") { thread in
    let own = thread.runLoop
    let otherLoop = other.runLoop
    let before = "own=\(own.isCurrent) other=\(otherLoop.isCurrent)"
    let child = fork()
    if child == 0 {
      // Nothing here that could wait for a lock another thread of the parent held.
      let line = "child: own=\(own.isCurrent) other=\(otherLoop.isCurrent)\n"
      _ = line.withCString { write(1, $0, strlen($0)) }
      _exit(0)
    }
    var status: Int32 = 0
    _ = waitpid(child, &status, 0)
    result.withLock { $0 = "parent: \(before) childExit=\(status)" }
  }
  do {
    try other.start()
    try worker.start()
    try worker.join()
  } catch {
    print("error: \(error)")
    exit(1)
  }
  // Joined before the exit: ThreadSanitizer reports a thread nobody joined as a leak.
  other.cancel()
  do {
    try other.join()
  } catch {
    print("error: \(error)")
    exit(1)
  }
  print(result.withLock { $0 })
  exit(0)
}

/// `core-exited-owner`: a plain thread makes its loop and exits; then new plain threads, one
/// at a time, ask whether that loop is current. glibc gives a new thread the stack, and so
/// the handle, of a thread that was joined, so most of them have the exited owner's handle.
/// Prints `reused=N current=M` for 10 threads.
private func exitedOwnersHandleOnANewThread() -> Never {
  final class Box: @unchecked Sendable {
    var loop: EventRunLoop?
    var owner = pthread_t()
    var reused = 0
    var current = 0
  }
  let box = Box()
  func onPlainThread(_ body: @escaping (Box) -> Void) {
    final class Job {
      let box: Box
      let body: (Box) -> Void
      init(_ box: Box, _ body: @escaping (Box) -> Void) {
        self.box = box
        self.body = body
      }
    }
    var thread = pthread_t()
    let job = Unmanaged.passRetained(Job(box, body)).toOpaque()
    let created = pthread_create(
      &thread, nil,
      { raw in
        let job = Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue()
        job.body(job.box)
        return nil
      }, job)
    guard created == 0 else {
      print("error: pthread_create \(created)")
      exit(1)
    }
    pthread_join(thread, nil)
  }
  onPlainThread { box in
    box.loop = EventRunLoop.current
    box.owner = pthread_self()
  }
  for _ in 0..<10 {
    onPlainThread { box in
      if pthread_self() == box.owner { box.reused += 1 }
      if box.loop!.isCurrent { box.current += 1 }
    }
  }
  print("reused=\(box.reused) current=\(box.current)")
  exit(0)
}

/// `core-run-main`: `EventRunLoop.runMain` from this synchronous main runs an async body on
/// the main actor, served by the main loop, returns its value, then rethrows a body's error.
private func runMainScenario() -> Never {
  struct Refused: Error {}
  do {
    let value = try EventRunLoop.runMain {
      print("body on the main thread: \(EventRunLoop.main.isCurrent)")
      let served = try await EventRunLoop.main.submit { "submitted work served by the main loop" }
      print(served)
      try await Task.sleep(for: .milliseconds(5))
      print("main loop running: \(EventRunLoop.main.isRunning)")
      return 42
    }
    print("value: \(value)")
    do {
      _ = try EventRunLoop.runMain { () throws -> Int in throw Refused() }
      print("not rethrown")
    } catch {
      print("rethrown: \(error is Refused)")
    }
  } catch {
    print("error: \(error)")
    exit(1)
  }
  exit(0)
}

/// `core-no-descriptors`: with the descriptor limit at the descriptors already open, the
/// loops cannot be made. Prints one line per attempt, in order: the main thread's
/// `makeCurrent()`, a `RunLoopThread`'s `start()` and a plain thread's `makeCurrent()` (each
/// the error's code and errno); then, the limit raised again, the plain thread's second try
/// and a new `RunLoopThread`, which work, and the main thread's, whose failure stays.
private func loopsWithoutDescriptors() -> Never {
  var limit = rlimit()
  getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
  let saved = limit
  // The limit at the descriptors open now, and every free number below it taken, so that
  // the next descriptor fails with EMFILE.
  var highest: Int32 = 2
  if let directory = opendir("/proc/self/fd") {
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) {
        String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
      }
      if let number = Int32(name) { highest = max(highest, number) }
    }
    closedir(directory)
  }
  limit.rlim_cur = rlim_t(highest + 1)
  guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
    print("error: setrlimit \(errno)")
    exit(1)
  }
  var fillers: [Int32] = []
  while case let filler = open("/dev/null", O_RDONLY | O_CLOEXEC), filler >= 0 {
    fillers.append(filler)
  }
  func describe(_ error: RunLoopError) -> String {
    "\(error.code) errno=\(error.systemError.map(String.init) ?? "none")"
  }
  func attempt(_ label: String, _ body: () throws(RunLoopError) -> Void) {
    do throws(RunLoopError) {
      try body()
      print("\(label): ok")
    } catch {
      print("\(label): \(describe(error))")
    }
  }
  attempt("main") { () throws(RunLoopError) in _ = try EventRunLoop.makeCurrent() }
  attempt("thread") { () throws(RunLoopError) in
    let thread = RunLoopThread(name: "refused") { _ in }
    try thread.start()
    try thread.join()
  }
  let plain = PlainThreadLoops()
  plain.run { print("plain: \(plain.attempt())") }
  var restored = saved
  setrlimit(Int32(RLIMIT_NOFILE.rawValue), &restored)
  for filler in fillers { close(filler) }
  plain.run { print("plain again: \(plain.attempt())") }
  attempt("thread again") { () throws(RunLoopError) in
    let thread = RunLoopThread(name: "accepted") { thread in
      _ = try thread.runLoop.run(mode: .default, timeout: .zero)
    }
    try thread.start()
    try thread.join()
  }
  attempt("main again") { () throws(RunLoopError) in _ = try EventRunLoop.makeCurrent() }
  exit(0)
}

/// One plain thread (not a `RunLoopThread`), kept for several jobs so that its second
/// `makeCurrent()` is the same thread's.
private final class PlainThreadLoops: @unchecked Sendable {
  // Unchecked: `job` is handed over under the semaphores, one side at a time.
  private var job: (() -> Void)?
  private let ready = DispatchSemaphore(value: 0)
  private let done = DispatchSemaphore(value: 0)

  init() {
    var thread = pthread_t()
    let created = pthread_create(
      &thread, nil,
      { raw in
        let loops = Unmanaged<PlainThreadLoops>.fromOpaque(raw!).takeUnretainedValue()
        while true {
          loops.ready.wait()
          loops.job?()
          loops.done.signal()
        }
      }, Unmanaged.passRetained(self).toOpaque())
    precondition(created == 0, "pthread_create \(created)")
  }

  /// Runs `body` on the thread and waits for it.
  func run(_ body: @escaping () -> Void) {
    job = body
    ready.signal()
    done.wait()
  }

  /// The thread's `makeCurrent()`, described (on the thread).
  func attempt() -> String {
    do throws(RunLoopError) {
      _ = try EventRunLoop.makeCurrent()
      return "ok"
    } catch {
      return "\(error.code) errno=\(error.systemError.map(String.init) ?? "none")"
    }
  }
}
