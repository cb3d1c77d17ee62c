import Foundation
import Glibc
import RunLoopCore
import RunLoopPorts

// The bench re-invokes itself as the server of the cross-process suite:
// `runloop-bench serve-named DIR NAME` or `runloop-bench serve-raw PATH`. Each prints "ready"
// once it accepts connections and exits when its standard input closes.

/// Runs the named-port echo server on the main thread's loop.
func serveNamed(directory: String, name: String) throws -> Never {
  let registry = try PortNameRegistry(directory: directory)
  let server = try NamedPortServer(name: name, registry: registry) { message in message.data }
  try server.add(to: .main, mode: .default)
  exitWhenStandardInputCloses()
  _ = write(1, "ready\n", 6)
  while true { try EventRunLoop.main.run() }
}

/// Echoes 16-byte frames over a Unix stream socket: the raw round trip, no framing, no loop.
func serveRaw(path: String) throws -> Never {
  let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
  var address = sockaddr_un()
  address.sun_family = sa_family_t(AF_UNIX)
  // `sun_path` is a C array (a tuple in Swift): filled as bytes.
  withUnsafeMutableBytes(of: &address.sun_path) { bytes in
    for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
  }
  unlink(path)
  // The socket call takes the generic `sockaddr` pointer: rebound for the call only.
  let bound = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
    }
  }
  guard bound == 0, listen(listener, 4) == 0 else { exit(2) }
  exitWhenStandardInputCloses()
  _ = write(1, "ready\n", 6)
  while true {
    let connection = accept(listener, nil, nil)
    guard connection >= 0 else { continue }
    var buffer = [UInt8](repeating: 0, count: 16)
    while readFully(connection, &buffer), writeFully(connection, buffer) {}
    close(connection)
  }
}

private func exitWhenStandardInputCloses() {
  Thread.detachNewThread {
    var byte: UInt8 = 0
    while read(0, &byte, 1) > 0 {}
    exit(0)
  }
}

func readFully(_ descriptor: Int32, _ buffer: inout [UInt8]) -> Bool {
  var done = 0
  let count = buffer.count
  while done < count {
    // The system call reads or fills the array's bytes in place.
    let got = buffer.withUnsafeMutableBytes {
      read(descriptor, $0.baseAddress! + done, count - done)
    }
    if got <= 0 { return false }
    done += got
  }
  return true
}

func writeFully(_ descriptor: Int32, _ buffer: [UInt8]) -> Bool {
  var done = 0
  while done < buffer.count {
    // The system call reads or fills the array's bytes in place.
    let put = buffer.withUnsafeBytes {
      write(descriptor, $0.baseAddress! + done, buffer.count - done)
    }
    if put <= 0 { return false }
    done += put
  }
  return true
}

/// A child process of this bench binary, started with a hidden subcommand.
final class BenchChild {
  let process = Process()
  let input = Pipe()
  let output = Pipe()

  init(_ arguments: [String]) throws {
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
    process.arguments = arguments
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    let line = output.fileHandleForReading.availableData
    guard String(decoding: line, as: UTF8.self).hasPrefix("ready") else {
      throw RunLoopError.invalidState("bench child \(arguments) did not start")
    }
  }

  func stop() {
    try? input.fileHandleForWriting.close()
    process.waitUntilExit()
  }
}

/// Round trips per second of `trip` for `duration` seconds.
private func roundTrips(seconds duration: Double, _ trip: () throws -> Void) rethrows -> Double {
  var trips = 0
  let start = nanosNow()
  let end = start + UInt64(duration * 1e9)
  while nanosNow() < end {
    for _ in 0..<32 { try trip() }
    trips += 32
  }
  return Double(trips) / seconds(since: start)
}

/// Request/reply round trips per second to a NamedPortServer in another process, and the
/// same over a raw Unix stream socket to an echo process, in alternating short rounds.
func crossProcessRoundTrips(rounds: Int, seconds duration: Double) throws -> (
  ours: Double, raw: Double
) {
  let directory = "/tmp/rlb-\(getpid())"
  mkdir(directory, 0o700)
  defer { rmdir(directory) }
  let named = try BenchChild(["serve-named", directory, "bench"])
  defer { named.stop() }
  let port = try NamedPort(name: "bench", registry: try PortNameRegistry(directory: directory))
  defer { port.invalidate() }

  let path = "/tmp/rlb-raw-\(getpid()).sock"
  defer { unlink(path) }
  let raw = try BenchChild(["serve-raw", path])
  defer { raw.stop() }
  let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
  defer { close(descriptor) }
  var address = sockaddr_un()
  address.sun_family = sa_family_t(AF_UNIX)
  // `sun_path` is a C array (a tuple in Swift): filled as bytes.
  withUnsafeMutableBytes(of: &address.sun_path) { bytes in
    for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
  }
  // The socket call takes the generic `sockaddr` pointer: rebound for the call only.
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
    }
  }
  guard connected == 0 else { throw RunLoopError.invalidState("cannot connect to \(path)") }

  let payload = [UInt8](repeating: 7, count: 16)
  var buffer = payload
  func ourTrip() throws { _ = try port.request(msgid: 1, data: payload) }
  func rawTrip() throws {
    guard writeFully(descriptor, buffer), readFully(descriptor, &buffer) else {
      throw RunLoopError.invalidState("raw echo failed")
    }
  }
  for _ in 0..<200 {
    try ourTrip()
    try rawTrip()
  }
  var ours: [Double] = []
  var rawRates: [Double] = []
  for _ in 0..<rounds {
    ours.append(try roundTrips(seconds: duration, ourTrip))
    rawRates.append(try roundTrips(seconds: duration, rawTrip))
  }
  return (median(ours), median(rawRates))
}
