import CPeers
import Foundation

/// The C peers' work and the floor, through CPeers: in this process by default, or each
/// measurement in a child process of its own (`--c-peers-in-child`), which shares nothing
/// with ours or NIO's (allocator arenas, caches, threads' placement), to show that running in
/// one process does not change their figures.
enum CSide {
  /// Whether each measurement runs in a child process.
  nonisolated(unsafe) static var inChild = false

  static func emptyPasses(_ peer: Peer, _ passes: Int) throws -> UInt64 {
    if inChild { return UInt64(try child(peer, "empty", passes)[0]) }
    return peers_empty_passes(peer.kind!, passes)
  }

  static func timerChurn(_ peer: Peer, _ offsets: [Double]) throws -> UInt64 {
    if inChild { return UInt64(try child(peer, "churn", offsets.count)[0]) }
    return offsets.withUnsafeBufferPointer {
      peers_timer_churn(peer.kind!, $0.baseAddress, $0.count)
    }
  }

  static func timerMemory(_ peer: Peer, _ count: Int) throws -> Double {
    if inChild { return try child(peer, "memory", count)[0] }
    return peers_timer_memory(peer.kind!, count)
  }

  static func pingPong(_ peer: Peer, _ roundTrips: Int) throws -> ThreadedSample {
    if inChild {
      let values = try child(peer, "ping-pong", roundTrips)
      return ThreadedSample(
        peers_ping_pong_result(
          nanoseconds: UInt64(values[0]), cpu_nanoseconds: UInt64(values[1]),
          allocations: UInt64(values[2])))
    }
    return ThreadedSample(peers_ping_pong(peer.kind!, roundTrips))
  }

  /// Runs `runloop-peers measure-c PEER WORK SIZE` and returns the numbers it prints. The
  /// child inherits the CPU affinity of the calling thread.
  private static func child(_ peer: Peer, _ work: String, _ size: Int) throws -> [Double] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
    process.arguments = ["measure-c", peer.rawValue, work, "\(size)"]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let values = String(decoding: output, as: UTF8.self).split(separator: " ").compactMap {
      Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    guard process.terminationStatus == 0, !values.isEmpty else {
      throw ChildFailure(description: "measure-c \(peer.rawValue) \(work) \(size) failed")
    }
    return values
  }

  /// The child's side of `child(_:_:_:)`: measures once and prints the numbers.
  static func serveChild(_ arguments: [String]) -> Int32 {
    guard arguments.count == 3, let peer = Peer(rawValue: arguments[0]), let kind = peer.kind,
      let size = Int(arguments[2])
    else { return 2 }
    switch arguments[1] {
    case "empty": print(peers_empty_passes(kind, size))
    case "churn":
      var generator = SystemRandomNumberGenerator()
      let offsets = (0..<size).map { _ in Double.random(in: 1...100, using: &generator) }
      print(offsets.withUnsafeBufferPointer { peers_timer_churn(kind, $0.baseAddress, size) })
    case "memory": print(peers_timer_memory(kind, size))
    case "ping-pong":
      let result = peers_ping_pong(kind, size)
      print(result.nanoseconds, result.cpu_nanoseconds, result.allocations)
    default: return 2
    }
    return 0
  }
}

/// A child measurement that did not finish or printed nothing.
struct ChildFailure: Error, CustomStringConvertible {
  let description: String
}
