import Glibc
import RunLoopCore

package func customSourceExample() throws {
  // snippet: custom-source
  let loop = EventRunLoop.current
  let source = CustomInputSource(
    name: "jobs", order: 10,
    schedule: { loop, mode in print("now in \(mode) of \(loop)") },
    cancel: { loop, mode in print("left \(mode) of \(loop)") },
    perform: { print("perform: runs on the loop's thread") })
  try loop.add(source, mode: .default)  // schedule call-out runs here

  source.signal()
  source.signal()  // two signals before the pass: one perform
  try loop.run(mode: .default, timeout: .zero)

  source.invalidate()  // cancel call-out runs here; the source is now unusable
  // end snippet
}

package func wakeExample(source: CustomInputSource, loop: EventRunLoop) {
  // snippet: signal-and-wake
  // On any thread: mark the source ready, then wake the loop if it sleeps.
  source.signal()
  loop.wakeUp()

  // The same two calls, for every loop the source is on.
  source.signalAndWakeUp()
  // end snippet
}

package func descriptorWatchExample(pipeReadEnd: Int32) throws {
  // snippet: descriptor-watch
  let watch = DescriptorWatch(fileDescriptor: pipeReadEnd, name: "pipe") { events in
    var byte: UInt8 = 0
    if events.contains(.readable) { _ = read(pipeReadEnd, &byte, 1) }
  }
  try EventRunLoop.current.add(watch, mode: .default)
  // end snippet
}

// snippet: command-buffer-types
/// Listing 3-8's application delegate: the loops a command source can be fed on.
final class SourceRegistry: Sendable {
  private let loops = GuardedState<[EventRunLoop]>([])

  func register(_ loop: EventRunLoop) { loops.withLock { $0.append(loop) } }
  func unregister(_ loop: EventRunLoop) { loops.withLock { $0.removeAll { $0 === loop } } }
  var registered: [EventRunLoop] { loops.withLock { $0 } }
}

/// Listing 3-3's RunLoopSource: a custom input source and the command buffer it drains.
final class CommandBufferSource: Sendable {
  let source: CustomInputSource
  private let commands: GuardedState<[String]>

  init(registry: SourceRegistry, execute: @escaping @Sendable (String) -> Void) {
    let commands = GuardedState<[String]>([])
    self.commands = commands
    source = CustomInputSource(
      name: "command-buffer",
      // Listing 3-4: scheduled on a loop, the source tells the registry where it lives.
      schedule: { loop, _ in registry.register(loop) },
      // Listing 3-6: removed or invalidated, it tells the registry to forget it.
      cancel: { loop, _ in registry.unregister(loop) },
      // Listing 3-5: on the loop's thread, take the whole buffer and run each command.
      perform: {
        let batch = commands.withLock { buffer -> [String] in
          defer { buffer.removeAll() }
          return buffer
        }
        for command in batch { execute(command) }
      })
  }

  /// Listing 3-7: install the source on the calling thread's loop.
  func addToCurrentRunLoop() throws {
    try EventRunLoop.current.add(source, mode: .default)
  }

  /// Listing 3-9: a client queues a command, signals the source and wakes the loop.
  func add(_ command: String, andFireOn loop: EventRunLoop) {
    commands.withLock { $0.append(command) }
    source.signal()
    loop.wakeUp()
  }
}
// end snippet

package func commandBufferExample() throws {
  // snippet: command-buffer-use
  let registry = SourceRegistry()
  let commandSource = CommandBufferSource(registry: registry) { command in
    print("worker runs", command)
    if command == "quit" { EventRunLoop.current.stop() }
  }

  // The worker thread installs the source and runs its loop (Figure 3-2's right side).
  let worker = RunLoopThread(name: "worker") { thread in
    try commandSource.addToCurrentRunLoop()
    try thread.runLoop.run()
  }
  try worker.start()

  // Clients on any thread find the loop in the registry and feed it.
  while registry.registered.isEmpty { usleep(1_000) }
  let workerLoop = registry.registered[0]
  commandSource.add("open", andFireOn: workerLoop)
  commandSource.add("quit", andFireOn: workerLoop)  // its handler stops the worker's loop
  try worker.join()

  // Invalidating the source runs its cancel call-out: the registry forgets the loop.
  commandSource.source.invalidate()
  assert(registry.registered.isEmpty)
  // end snippet
}
