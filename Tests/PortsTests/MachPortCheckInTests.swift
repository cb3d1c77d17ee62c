import Dispatch
import Glibc
import RunLoopCore
import RunLoopPorts
import Testing

/// The guide's NSMachPort check-in (Listings 3-12 to 3-15) with an ``InProcessPort``: the
/// main thread hands its port to a new worker; the worker makes its own port, adds it to its
/// loop and checks in by sending that port back; the main thread then talks to the worker
/// through it, and the worker answers through the reply port of each message.
@Suite("Check-in between threads")
struct MachPortCheckInTests {
  static let checkInMessage: PortMessageID = 100
  static let squareRequest: PortMessageID = 200
  static let squareReply: PortMessageID = 201

  /// What the worker (`MyWorkerClass` in the guide) keeps.
  final class Worker: Sendable {
    let shouldExit = GuardedState(false)
    let remotePort = GuardedState<InProcessPort?>(nil)

    // Listing 3-15: the worker's check-in.
    func sendCheckInMessage(to outPort: InProcessPort) throws {
      remotePort.withLock { $0 = outPort }
      let myPort = try InProcessPort(name: "worker") { message in
        self.handlePortMessage(message)
      }
      myPort.onInvalidation { _ in self.shouldExit.withLock { $0 = true } }
      try myPort.add(to: .current, mode: .default)
      let checkIn = LoopPortMessage(
        msgid: MachPortCheckInTests.checkInMessage, sendPort: outPort, receivePort: myPort)
      try checkIn.send(before: .now)
    }

    func handlePortMessage(_ message: LoopPortMessage) {
      guard message.msgid == MachPortCheckInTests.squareRequest,
        let value = message.components.first?.first
      else { return }
      let square = UInt16(value) * UInt16(value)
      try? message.sendPort?.send(
        msgid: MachPortCheckInTests.squareReply,
        components: [[UInt8(square >> 8), UInt8(square & 0xFF)]], before: .now + .seconds(5))
    }

    // Listing 3-14: the worker thread's entry.
    static func launchThread(with port: InProcessPort) throws {
      let worker = Worker()
      try worker.sendCheckInMessage(to: port)
      repeat {
        _ = try EventRunLoop.current.run(mode: .default, timeout: .seconds(1))
      } while !worker.shouldExit.withLock { $0 }
    }
  }

  @Test func workerChecksInWithItsPortAndAnswersThroughIt() throws {
    let distantPort = GuardedState<InProcessPort?>(nil)
    let replies = GuardedState<[UInt16]>([])
    let mainPortBox = GuardedState<InProcessPort?>(nil)
    // Listings 3-12 and 3-13 on a thread standing for the main thread.
    let main = try startLoopThread("main") { loop in
      let myPort = try InProcessPort(name: "main") { message in
        switch message.msgid {
        case Self.checkInMessage:
          // The worker's port arrives as the message's send port.
          distantPort.withLock { $0 = message.sendPort }
        case Self.squareReply:
          let bytes = message.components[0]
          replies.withLock { $0.append(UInt16(bytes[0]) << 8 | UInt16(bytes[1])) }
        default:
          break
        }
      }
      try myPort.add(to: loop, mode: .default)
      mainPortBox.withLock { $0 = myPort }
      let worker = RunLoopThread(name: "worker", detached: true) { _ in
        try Worker.launchThread(with: myPort)
      }
      try worker.start()
    }
    #expect(eventually { distantPort.withLock { $0 != nil } })
    let workerPort = try #require(distantPort.withLock { $0 })
    #expect(workerPort.name == "worker")
    #expect(workerPort.owningLoop !== main.runLoop)

    // The main thread now talks to the worker; replies come back to the main port.
    let mainPort = try #require(mainPortBox.withLock { $0 })
    for value in [3, 12, 255] as [UInt8] {
      try workerPort.send(
        msgid: Self.squareRequest, components: [[value]], receivePort: mainPort,
        before: .now + .seconds(5))
    }
    #expect(eventually { replies.withLock { $0.count } == 3 })
    #expect(replies.withLock { $0 } == [9, 144, 65025])

    // Invalidating the worker's port tells the worker to exit (its run loop then returns).
    let exited = GuardedState(false)
    workerPort.onInvalidation { _ in exited.withLock { $0 = true } }
    workerPort.invalidate()
    #expect(exited.withLock { $0 })
    try finish(main)
    mainPort.invalidate()
  }
}
