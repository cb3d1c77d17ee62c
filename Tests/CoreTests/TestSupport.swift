import Dispatch
import Glibc
import RunLoopCore

/// Records what a loop tells its instruments, plus marks the test adds, in order.
final class Recorder: RunLoopInstrument, @unchecked Sendable {
  let interests: InstrumentInterests
  private let events = GuardedState<[String]>([])

  init(_ interests: InstrumentInterests = .activities) {
    self.interests = interests
  }

  func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    events.withLock { $0.append(activity.name) }
  }

  func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo) {
    events.withLock { $0.append("callout:\(callout.kind):\(callout.name)") }
  }

  func mark(_ text: String) {
    events.withLock { $0.append(text) }
  }

  var log: [String] { events.withLock { $0 } }

  func clear() { events.withLock { $0.removeAll() } }
}

/// Runs `body` on a fresh thread that owns a fresh run loop, and waits for it.
@discardableResult
func onNewThread<T: Sendable>(
  _ name: String = "test", _ body: @escaping @Sendable (EventRunLoop) throws -> T
) throws -> T {
  let result = GuardedState<Result<T, any Error>?>(nil)
  let thread = RunLoopThread(name: name) { thread in
    let value = Result { try body(thread.runLoop) }
    result.withLock { $0 = value }
  }
  try thread.start()
  try thread.join()
  return try result.withLock { $0! }.get()
}

/// A pipe whose ends are closed when the value is released.
final class Pipe: Sendable {
  let readEnd: Int32
  let writeEnd: Int32

  init() {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
    readEnd = fds[0]
    writeEnd = fds[1]
  }

  deinit {
    close(readEnd)
    close(writeEnd)
  }

  func writeByte() {
    var byte: UInt8 = 1
    _ = write(writeEnd, &byte, 1)
  }

  func readByte() -> Bool {
    var byte: UInt8 = 0
    return read(readEnd, &byte, 1) == 1
  }
}

/// Waits up to `seconds` for `condition`, polling; for cross-thread hand-offs in tests.
func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
  let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
  while ContinuousClock.now < deadline {
    if condition() { return true }
    usleep(1000)
  }
  return condition()
}
