import Dispatch
import Glibc
import RunLoopCore
import RunLoopPorts
import Testing

/// An invalidated port or source must not keep itself (and its descriptors) alive: the
/// watch it hands the loop must not hold it past invalidation.
@Suite("Invalidated ports and sources are released", .serialized)
struct PortLifetimeTests {
  @Test func invalidatedInProcessPortsAreFreedAndCloseTheirEventfds() throws {
    weak var weakPort: InProcessPort?
    weak var weakAddedPort: InProcessPort?
    let before = openDescriptorCount()
    for index in 0..<200 {
      let port = try InProcessPort(name: "p\(index)") { _ in }
      if index == 0 { weakPort = port }
      try port.send(msgid: 1, before: .now)
      port.invalidate()
    }
    // One that was added to a loop (the loop holds it until invalidation).
    let thread = try startLoopThread("owner")
    do {
      let port = try InProcessPort(name: "added") { _ in }
      weakAddedPort = port
      try port.add(to: thread.runLoop, mode: .default)
      port.invalidate()
    }
    try finish(thread)
    let after = openDescriptorCount()
    #expect(weakPort == nil, "an invalidated, unreferenced port was not deallocated")
    #expect(weakAddedPort == nil, "an invalidated port that was on a loop was not deallocated")
    // Other suites run in parallel and open descriptors too: allow for them, far below the
    // 201 a leak would add.
    #expect(after - before < 100, "leaked \(after - before) descriptors for 201 ports")
  }

  @Test func addedPortStaysAliveUntilInvalidated() throws {
    let received = GuardedState(0)
    weak var weakPort: InProcessPort?
    let thread = try startLoopThread("owner")
    do {
      let port = try InProcessPort(name: "kept") { _ in received.withLock { $0 += 1 } }
      weakPort = port
      try port.add(to: thread.runLoop, mode: .default)
    }
    let port = try #require(weakPort, "the loop let go of a port that was still valid")
    try port.send(msgid: 1, before: .now + .seconds(1))
    #expect(eventually { received.withLock { $0 } == 1 })
    port.invalidate()
    try finish(thread)
  }

  @Test func invalidatedDescriptorSourceIsFreed() throws {
    weak var weakSource: DescriptorSource?
    let pipe = TestPipe()
    do {
      let source = DescriptorSource(fileDescriptor: pipe.readEnd, onReadable: { _ in })
      weakSource = source
      source.invalidate()
    }
    #expect(weakSource == nil)
  }

  @Test func invalidatedSocketSourceAndServerAreFreed() throws {
    let temporary = try TemporaryRegistry()
    weak var weakListener: SocketSource?
    weak var weakServer: NamedPortServer?
    do {
      let listener = try SocketSource(listeningOn: .tcp(host: "127.0.0.1", port: 0)) { _, fd in
        close(fd)
      }
      weakListener = listener
      listener.invalidate()
      #expect(listener.localPort == nil, "an invalidated listener read a closed descriptor")
      let server = try NamedPortServer(name: "freed", registry: temporary.registry) { _ in nil }
      weakServer = server
      server.invalidate()
    }
    #expect(weakListener == nil)
    #expect(weakServer == nil)
  }
}
