import RunLoopCore
import RunLoopPorts
import Synchronization

/// One worker thread of the service, with its own run loop, its own port and a custom input
/// source whose command buffer the main thread fills (the guide's Figure 3-2).
final class DemoWorker: @unchecked Sendable {
  let index: Int
  let name: String
  /// The command buffer of Figure 3-2: the main thread appends, the worker's source drains.
  let commands = GuardedState<[DemoJob]>([])
  /// The thread; set once in `init` (the `var` that makes the class `@unchecked Sendable`:
  /// its closure needs `self`, so it cannot be a `let` assigned first).
  private(set) var thread: RunLoopThread!
  private let quit = Atomic<Bool>(false)
  private let finished = Atomic<Int>(0)

  init(index: Int, service: DemoService) {
    self.index = index
    self.name = "worker-\(index)"
    self.thread = RunLoopThread(name: name) { [self] thread in
      try self.main(thread: thread, service: service)
    }
  }

  /// Jobs this worker finished.
  var jobsFinished: Int { finished.load(ordering: .relaxed) }

  /// The worker thread's body: set up the port and the source, check in, run until told to
  /// quit.
  private func main(thread: RunLoopThread, service: DemoService) throws {
    let loop = thread.runLoop
    let port = try InProcessPort(name: "\(name).port") { [self] message in
      self.handle(message, loop: loop, service: service)
    }
    try port.add(to: loop, mode: .default)
    let source = CustomInputSource(
      name: "\(name).commands",
      schedule: { [self] _, mode in
        // Listing 3-4 (with 3-8): tell the main thread the source exists, so it can send commands.
        EventRunLoop.main.perform(name: "register-source") { [self] in
          service.register(worker: self, mode: mode)
        }
      },
      cancel: { _, _ in },
      perform: { [self] in
        // Listing 3-5: drain the command buffer, then run each command outside the lock.
        let jobs = commands.withLock { buffer -> [DemoJob] in
          defer { buffer.removeAll() }
          return buffer
        }
        for job in jobs { self.run(job, service: service) }
      })
    sourceBox.withLock { $0 = source }
    try loop.add(source, mode: .default)
    // Listing 3-15: check in with the main thread, giving it our port for replies.
    try service.mainPort.send(
      msgid: DemoJob.MessageID.checkIn, components: [Array(name.utf8)], receivePort: port,
      before: .now + .seconds(2))
    while !quit.load(ordering: .acquiring) {
      try loop.run(mode: .default, timeout: nil)
    }
    source.invalidate()
    port.invalidate()
  }

  /// The worker's custom source, once made.
  let sourceBox = GuardedState<CustomInputSource?>(nil)

  /// Asks the worker to finish from any thread, without its port (for a worker that has not
  /// checked in): the flag ends its run loop's `while`, the perform ends the current run.
  func requestQuit() {
    quit.store(true, ordering: .releasing)
    let loop = thread.runLoop
    loop.perform(name: "quit") { loop.stop() }
  }

  /// Queues `job` in the command buffer and signals the source (Listing 3-9's fireCommand).
  func enqueueCommand(_ job: DemoJob) {
    commands.withLock { $0.append(job) }
    sourceBox.withLock { $0 }?.signalAndWakeUp()
  }

  private func handle(_ message: LoopPortMessage, loop: EventRunLoop, service: DemoService) {
    switch message.msgid {
    case DemoJob.MessageID.job:
      if let job = DemoJob(components: message.components) { run(job, service: service) }
    case DemoJob.MessageID.quit:
      quit.store(true, ordering: .releasing)
      loop.stop()
    default:
      break
    }
  }

  private func run(_ job: DemoJob, service: DemoService) {
    let result = job.run()
    finished.add(1, ordering: .relaxed)
    service.jobFinished(job, result: result, by: self)
  }
}
