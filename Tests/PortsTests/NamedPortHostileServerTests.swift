import Glibc
import RunLoopCore
import RunLoopPorts
import Testing

@Suite("A named port client facing a hostile server", .serialized)
struct NamedPortHostileServerTests {
  /// A server that answers a request with a flood of replies to other requests: the client
  /// (a separate process) drops them as it reads, so its memory stays flat, and it gives up
  /// at its receive timeout with `timedOut`, not later.
  @Test func floodOfRepliesToOtherRequestsNeitherGrowsTheClientNorDelaysItsTimeout() throws {
    let temporary = try TemporaryRegistry()
    let bulk = 128 << 20
    let hostile = try HostileServer(path: temporary.registry.socketPath(for: "hostile"))
    let job = BackgroundJob { hostile.serveOneFlood(bulk: bulk) }
    let client = try HelperProcess(["ports-request-timed", temporary.directory, "hostile", "3000"])
    let line = try #require(client.readLine(timeout: .seconds(30)))
    #expect(client.waitForExit() == 0)
    job.wait()
    let fields = Dictionary(
      uniqueKeysWithValues: line.split(separator: " ").map { field in
        let parts = field.split(separator: ":", maxSplits: 1)
        return (String(parts[0]), parts.count == 2 ? String(parts[1]) : "")
      })
    #expect(fields["error"] == "timedOut", "\(line)")
    #expect(hostile.sentWholeFlood, "the client stopped reading before the flood ended: \(line)")
    let growth = Int(fields["growth-kb"] ?? "") ?? .max
    // The flood is 128 MiB; a client that kept what it read would grow by at least that.
    #expect(growth < 32 * 1024, "the client grew by \(growth) KiB during a 128 MiB flood")
    let elapsed = Int(fields["elapsed-ms"] ?? "") ?? .max
    #expect(elapsed >= 3000, "gave up before its timeout: \(line)")
    // Margin for a loaded machine; the flood alone would keep a client busy for longer.
    #expect(elapsed < 5000, "overran its 3 s timeout: \(line)")
  }
}

/// A server that speaks the frame format by hand: it reads one request and answers with
/// replies carrying another request id, 128 MiB of them as fast as the client reads, then
/// a small one every 10 ms until the client leaves.
final class HostileServer: Sendable {
  private let listener: Int32
  private let flooded = GuardedState(false)

  init(path: String) throws {
    listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8) + [0]
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    let status = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard status == 0, listen(listener, 4) == 0 else {
      let code = errno
      close(listener)
      throw RunLoopError.systemCall("bind/listen(\(path))", errno: code)
    }
  }

  deinit { close(listener) }

  /// Whether all of the flood was taken by the client.
  var sentWholeFlood: Bool { flooded.withLock { $0 } }

  func serveOneFlood(bulk: Int) {
    let client = accept(listener, nil, nil)
    guard client >= 0 else { return }
    defer { close(client) }
    // The request: a header and a one-byte payload.
    var request = [UInt8](repeating: 0, count: 21)
    var got = 0
    while got < request.count {
      let count = request.withUnsafeMutableBytes { read(client, $0.baseAddress! + got, 21 - got) }
      guard count > 0 else { return }
      got += count
    }
    let requestID =
      UInt32(request[12]) << 24 | UInt32(request[13]) << 16 | UInt32(request[14]) << 8
      | UInt32(request[15])
    let other = requestID &+ 1000
    let large =
      RawClient.header(kind: 3, length: 65536, requestID: other)
      + [UInt8](repeating: 0x55, count: 65536)
    var sent = 0
    while sent < bulk {
      guard sendAll(client, large) else { return }
      sent += large.count
    }
    flooded.withLock { $0 = true }
    let small = RawClient.header(kind: 3, length: 4, requestID: other) + [0, 0, 0, 0]
    while sendAll(client, small) { usleep(10_000) }
  }

  private func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
      let sent = bytes.withUnsafeBytes {
        send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
      }
      guard sent > 0 else { return false }
      offset += sent
    }
    return true
  }
}
