import Foundation
import RunLoopCore
import RunLoopPorts
import Tracing

/// The demo's stock, an actor whose jobs run on a loop: a reservation asks the warehouse, a
/// second process, over a named port.
actor Stock {
  let loop: EventRunLoop
  let warehouse: NamedPort
  nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

  init(loop: EventRunLoop, warehouse: NamedPort) {
    self.loop = loop
    self.warehouse = warehouse
  }

  func reserve(_ item: String) throws -> String {
    let reply = try warehouse.request(msgid: 1, data: Array(item.utf8))
    return String(decoding: reply, as: UTF8.self)
  }
}

/// The request path: a root span `demo.request`, a perform on the worker loop, an actor job
/// on that loop, and a named-port request into the server process it starts.
func runRequest(endpoint: String) async throws {
  let exporter = try Exporter(endpoint: endpoint, service: "runloop-demo")
  let directory = FileManager.default.temporaryDirectory
    .appendingPathComponent("runloop-otlp-\(getpid())").path
  try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let server = Process()
  server.executableURL = URL(fileURLWithPath: "/proc/self/exe")
  server.arguments = ["serve", endpoint, directory]
  try server.run()
  defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }

  let registry = try PortNameRegistry(directory: directory)
  let warehouse = try connect(to: "warehouse", registry: registry, server: server)
  let worker = try startLoopThread("demo-worker")
  let stock = Stock(loop: worker.runLoop, warehouse: warehouse)
  let reply = try await withSpan("demo.request") { _ in
    let job = try await worker.runLoop.submit(name: "demo.perform") {
      // The task starts on the worker loop, so its first job is queued here, inside the
      // perform's span, and the loop parents the job's span on it.
      Task(executorPreference: worker.runLoop) { try await stock.reserve("widget") }
    }
    return try await job.value
  }
  print("reply: \(reply)")
  stopLoopThread(worker)
  server.waitUntilExit()
  try await exporter.shutDown()
  guard server.terminationStatus == 0 else {
    throw DemoOTLPError(message: "the server exited with \(server.terminationStatus)")
  }
}

/// Connects once the server has registered its name (it starts in parallel), for up to ten
/// seconds, or until the server exits.
private func connect(to name: String, registry: PortNameRegistry, server: Process) throws
  -> NamedPort
{
  let deadline = ContinuousClock.now + .seconds(10)
  while true {
    do throws(RunLoopError) {
      return try NamedPort(name: name, registry: registry)
    } catch {
      let starting = ContinuousClock.now < deadline && server.isRunning
      guard error.code == .nameNotFound && starting else { throw error }
      usleep(10_000)
    }
  }
}

/// A failure of the demo's own, with its message.
struct DemoOTLPError: Error, CustomStringConvertible {
  let message: String
  var description: String { message }
}
