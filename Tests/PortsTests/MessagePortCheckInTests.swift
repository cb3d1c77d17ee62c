import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Testing

/// The guide's Core Foundation check-in (Listings 3-17 to 3-19) between two processes: the
/// main side registers a named port and starts the worker with the port's name; the worker
/// looks the main port up, registers a port of its own, and checks in by sending its name;
/// the main side looks the worker's port up by that name and talks to it.
@Suite("Check-in between processes")
struct MessagePortCheckInTests {
  static let checkInMessage: Int32 = 100
  static let squareRequest: Int32 = 200
  static let quit: Int32 = 3

  @Test func workerProcessChecksInByNameAndAnswersRequests() throws {
    let temporary = try TemporaryRegistry()
    let workerNames = GuardedState<[String]>([])
    // Listings 3-17 and 3-18: the main port and its handler.
    let mainPort = try NamedPortServer(name: "com.myapp.MainThread", registry: temporary.registry) {
      message in
      if message.msgid == Self.checkInMessage {
        workerNames.withLock { $0.append(String(decoding: message.data, as: UTF8.self)) }
      }
      return nil
    }
    let main = try startLoopThread("main") { loop in try mainPort.add(to: loop, mode: .default) }
    // Listing 3-19 runs in the helper process.
    let worker = try HelperProcess(["ports-checkin", temporary.directory, "com.myapp.MainThread"])
    #expect(worker.readLine() == "ready")
    #expect(eventually { workerNames.withLock { $0.count } == 1 })
    let workerName = try #require(workerNames.withLock { $0.first })
    #expect(workerName == "com.myapp.thread-\(worker.pid)")

    // The main side obtains the worker's port by name and uses it.
    let workerPort = try NamedPort(name: workerName, registry: temporary.registry)
    for value in [2, 12, 1000] {
      let reply = try workerPort.request(msgid: Self.squareRequest, data: Array("\(value)".utf8))
      #expect(String(decoding: reply, as: UTF8.self) == "\(value * value)")
    }
    _ = try workerPort.request(msgid: Self.quit)
    #expect(worker.waitForExit() == 0)
    // The worker unregistered its name on the way out.
    #expect(!temporary.registry.isRegistered(workerName))
    try finish(main)
    mainPort.invalidate()
  }
}
