import Dispatch
import Glibc
import RunLoopCore
@_exported import RunLoopTestSupport

/// A pipe whose ends are closed when the value is released (unless handed over).
final class TestPipe: Sendable {
  let readEnd: Int32
  let writeEnd: Int32

  init() {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    for fd in fds { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
    readEnd = fds[0]
    writeEnd = fds[1]
  }

  func write(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { Glibc.write(writeEnd, $0.baseAddress, $0.count) }
  }
}

/// Whether `fd` is an open descriptor.
func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) != -1 }

/// Starts a thread owning a loop; `setUp` runs on it first, then it runs its loop until
/// stopped. Returns the thread once `setUp` finished.
func startLoopThread(
  _ name: String, setUp: @escaping @Sendable (EventRunLoop) throws -> Void = { _ in }
) throws -> RunLoopThread {
  let ready = DispatchSemaphore(value: 0)
  let thread = RunLoopThread(name: name) { thread in
    let loop = thread.runLoop
    // A source that never fires keeps the default mode from being empty.
    let keepAlive = CustomInputSource(name: "keep-alive") {}
    try loop.add(keepAlive, mode: .default)
    do {
      try setUp(loop)
    } catch {
      ready.signal()
      throw error
    }
    ready.signal()
    while !thread.isCancelled {
      _ = try loop.run(mode: .default, timeout: .seconds(5))
    }
    keepAlive.invalidate()
  }
  try thread.start()
  ready.wait()
  return thread
}

/// Stops and joins a thread made by ``startLoopThread(_:setUp:)``.
func finish(_ thread: RunLoopThread) throws {
  thread.cancel()
  // Queued, so the stop cannot slip between two runs.
  thread.runLoop.perform { EventRunLoop.current.stop() }
  try thread.join()
}

/// Runs `loop` (on its own thread) in `mode` until `condition` holds or `seconds` pass.
func run(
  _ loop: EventRunLoop, mode: LoopMode = .default, seconds: Double = 10,
  until condition: () -> Bool
) throws {
  let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
  while !condition() && ContinuousClock.now < deadline {
    _ = try loop.run(mode: mode, timeout: .milliseconds(50), returnAfterSourceHandled: true)
  }
}

/// How many descriptors this process has open.
func openDescriptorCount() -> Int {
  guard let directory = opendir("/proc/self/fd") else { return -1 }
  defer { closedir(directory) }
  var count = 0
  while readdir(directory) != nil { count += 1 }
  return count
}

/// `body` on a thread of its own; `wait()` returns once it finished. Not on a Dispatch
/// worker: Swift's global executor runs the test run's tasks on Dispatch's default global
/// threads (on Linux), and a job queued behind tests that keep them busy can wait for
/// seconds, longer than the timeouts the jobs here serve.
final class BackgroundJob: Sendable {
  private let thread: RunLoopThread

  init(_ body: @escaping @Sendable () -> Void) {
    thread = RunLoopThread(name: "background-job") { _ in body() }
    do {
      try thread.start()
    } catch {
      preconditionFailure("no thread for a background job: \(error)")
    }
  }

  func wait() { try? thread.join() }
}
