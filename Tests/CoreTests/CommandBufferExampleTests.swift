import Glibc
import RunLoopCore
import Testing

// The guide's Figure 3-2 and Listings 3-3 to 3-9: a custom input source with a command buffer.
// Client threads add commands to the buffer, signal the source and wake the worker's loop;
// the source's perform call-out drains the buffer on the worker's thread. The schedule
// call-out registers the source with the "application delegate" on the main side (here: a
// coordinator) through a perform request, as Listing 3-6 does with performSelectorOnMainThread.

/// Listing 3-3's `RunLoopSource`: the source plus its command buffer.
final class CommandSource: Sendable {
  let commands = GuardedState<[Int]>([])
  let executed = GuardedState<[Int]>([])
  let source: CustomInputSource

  init(coordinator: Coordinator) {
    let commands = self.commands
    let executed = self.executed
    // Listing 3-5 (schedule), 3-6 (perform), 3-7 (cancel).
    source = CustomInputSource(
      name: "command-buffer",
      schedule: { loop, _ in coordinator.register(loop) },
      cancel: { loop, _ in coordinator.unregister(loop) },
      perform: {
        let batch = commands.withLock { buffer -> [Int] in
          defer { buffer.removeAll() }
          return buffer
        }
        executed.withLock { $0.append(contentsOf: batch) }
      })
  }

  /// Listing 3-4's `addCommand:withData:` and 3-9's `fireAllCommandsOnRunLoop:`.
  func add(_ command: Int, andFireOn loop: EventRunLoop) {
    commands.withLock { $0.append(command) }
    source.signal()
    loop.wakeUp()
  }
}

/// Listing 3-8's application delegate: keeps the registered sources' loops.
final class Coordinator: Sendable {
  let loops = GuardedState<[EventRunLoop]>([])

  func register(_ loop: EventRunLoop) { loops.withLock { $0.append(loop) } }
  func unregister(_ loop: EventRunLoop) { loops.withLock { $0.removeAll { $0 === loop } } }
}

@Suite("The guide's command-buffer input source (Figure 3-2)")
struct CommandBufferExampleTests {
  @Test func commandsFromManyClientThreadsAllRunOnTheWorkerInPerClientOrder() throws {
    let coordinator = Coordinator()
    let commandSource = CommandSource(coordinator: coordinator)
    let worker = RunLoopThread(name: "worker") { thread in
      try thread.runLoop.add(commandSource.source, mode: .default)
      try thread.runLoop.run()
    }
    try worker.start()
    #expect(eventually { coordinator.loops.withLock { $0.count } == 1 })
    let workerLoop = coordinator.loops.withLock { $0[0] }
    #expect(workerLoop === worker.runLoop)

    let clientCount = 4
    let perClient = 2_000
    var clients: [RunLoopThread] = []
    for client in 0..<clientCount {
      let thread = RunLoopThread(name: "client\(client)") { _ in
        for index in 0..<perClient {
          commandSource.add(client * 1_000_000 + index, andFireOn: workerLoop)
        }
      }
      try thread.start()
      clients.append(thread)
    }
    for client in clients { try client.join() }
    #expect(eventually { commandSource.executed.withLock { $0.count } == clientCount * perClient })

    let executed = commandSource.executed.withLock { $0 }
    for client in 0..<clientCount {
      let mine = executed.filter { $0 / 1_000_000 == client }.map { $0 % 1_000_000 }
      #expect(mine == Array(0..<perClient))
    }
    commandSource.source.invalidate()
    #expect(coordinator.loops.withLock { $0.isEmpty })
    workerLoop.stop()
    try worker.join()
  }
}
