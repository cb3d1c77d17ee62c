import Foundation
import RunLoopCore
import RunLoopPorts

/// The warehouse: a named-port server on a loop of its own that answers one reservation,
/// then exports its spans and exits.
func runServer(endpoint: String, directory: String) async throws {
  let exporter = try Exporter(endpoint: endpoint, service: "runloop-demo-warehouse")
  let answered = GuardedState(false)
  let registry = try PortNameRegistry(directory: directory)
  let server = try NamedPortServer(name: "warehouse", registry: registry) { message in
    answered.withLock { $0 = true }
    return Array("reserved \(String(decoding: message.data, as: UTF8.self))".utf8)
  }
  let thread = try startLoopThread("warehouse")
  try await thread.runLoop.submit { try server.add(to: thread.runLoop, mode: .default) }
  let deadline = ContinuousClock.now + .seconds(30)
  while !answered.withLock({ $0 }) && ContinuousClock.now < deadline {
    try await Task.sleep(for: .milliseconds(10))
  }
  // Joining the loop's thread ends the handler's span before the exporter's last flush.
  stopLoopThread(thread)
  server.invalidate()
  try await exporter.shutDown()
  guard answered.withLock({ $0 }) else {
    throw DemoOTLPError(message: "no request came within 30 seconds")
  }
}
