import Foundation
import Glibc

// Foundation's SocketPort (swift-corelibs-foundation, Sources/Foundation/Port.swift), driven
// the one way it works on Linux. Two defects of its receiving side decide the usage:
//
// 1. `handleMessage(_:from:socket:)` takes the sender's signature from
//    `messageBuffer[12 ..< min(12 + signatureLength, message.count - 20)]`. A message is a
//    12-byte header, a 20-byte signature (IPv4) and its components, so unless the components
//    add at least 20 bytes the slice is cut short, `Signature(darwinCompatibleDataRepresentation:)`
//    returns nil and the delegate is never called. A message without components, or with one
//    data component under 12 bytes, is dropped silently. We send one 12-byte data component.
//
// 2. `socketDidReceiveData` keeps the bytes after the first message in a `Data` slice
//    (`toStore = storedData[offset: messageEndIndex...]`), whose indices do not start at 0.
//    On the next turn `messageEndIndex` is computed from that slice's `startIndex`, and the
//    file's `subscript(offset:)` adds `startIndex` once more, so the index is past the end:
//    with 2 messages in one read (or one and a part) the subscript traps; with 3, the third is
//    lost. The CFSocket manager thread reads up to 32 KiB at a time, so a sender that does
//    not wait soon gets 2 messages into one read (20 back to back trap in practice).
//
// Hence: one message in flight. The sender waits until the delegate has seen a message before
// it sends the next; each read then holds exactly one message. A SocketPort over a Unix socket
// cannot send at all: `send` passes the address to CFSocketSendData, whose sendto on a
// connected AF_UNIX stream socket fails with EISCONN (TCP ignores the address).
//
// It runs in a child process (`runloop-bench socketport MODE COUNT`) so that a trap cannot
// end the bench; the same subcommand reproduces the three defects by hand.

/// Bytes of the data component each SocketPort message carries (defect 1 needs at least 12).
let socketPortPayload = 12

/// Bytes of one such message on the wire: a 12-byte header (magic, length, msgid), a 20-byte
/// IPv4 signature, an 8-byte component header and the component.
let socketPortWireSize = 40 + socketPortPayload

/// 127.0.0.1:`port`.
func loopbackAddress(port: UInt16) -> sockaddr_in {
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = port.bigEndian
  address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
  return address
}

/// A TCP socket listening on an ephemeral loopback port, and that port; `nil` when the
/// system refuses. The caller closes the socket.
func loopbackListener() -> (descriptor: Int32, port: UInt16)? {
  let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard listener >= 0 else { return nil }
  var address = loopbackAddress(port: 0)
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  // The socket call takes the generic `sockaddr` pointer: rebound for the call only.
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(listener, $0, length) == 0 && listen(listener, 1) == 0
        && getsockname(listener, $0, &length) == 0
    }
  }
  guard bound else {
    close(listener)
    return nil
  }
  return (listener, UInt16(bigEndian: address.sin_port))
}

/// Counts SocketPort messages on the receiving loop and releases the sender once per message.
final class SocketPortReceiver: NSObject, PortDelegate, @unchecked Sendable {
  // Unchecked: NSObject subclasses cannot be checked; its fields are a Counter and a Latch.
  let received = Counter()
  let each = Latch()
  func handle(_ message: PortMessage) {
    received.add()
    each.signal()
  }
}

/// A local TCP SocketPort scheduled on a CFRunLoop thread, and a remote port to send to it.
final class SocketPortPair: @unchecked Sendable {
  // Unchecked: Foundation's SocketPort is not Sendable; the pair is made on one thread and
  // its ports are used by the CF loop thread they are scheduled on and by the sender.
  let receiver = SocketPortReceiver()
  let receivePort: SocketPort
  let sendPort: SocketPort
  /// The TCP port the receiving port listens on (127.0.0.1 and every other address).
  let localPort: UInt16
  private let stopFlag = Counter()

  init?() {
    guard let local = SocketPort(tcpPort: 0) else { return nil }
    receivePort = local
    receivePort.setDelegate(receiver)
    // The port's address is a sockaddr_in in a Data: the port number is its bytes 2 and 3.
    localPort = receivePort.address.withUnsafeBytes { bytes in
      UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
    }
    guard let remote = SocketPort(remoteWithTCPPort: localPort, host: "127.0.0.1") else {
      return nil
    }
    sendPort = remote
    let ready = Latch()
    let handle = CFHandle(object: receivePort)
    let stopFlag = stopFlag
    Thread {
      RunLoop.current.add(handle.object, forMode: .default)
      ready.signal()
      while stopFlag.value == 0 {
        _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
      }
    }.start()
    ready.wait()
  }

  /// Sends one message; `payload` nil sends it without components.
  func send(payload: Int?) -> Bool {
    let components = payload.map { NSMutableArray(array: [Data(count: $0)]) }
    return sendPort.send(
      before: Date(timeIntervalSinceNow: 1), components: components, from: nil, reserved: 0)
  }

  /// How many of `count` messages reach the delegate, waiting up to 2 s for each.
  func waitForDeliveries(_ count: Int) -> Int {
    var delivered = 0
    while delivered < count, receiver.each.wait(seconds: 2) { delivered += 1 }
    return delivered
  }

  func stop() { stopFlag.add() }
}

/// The bytes of one SocketPort message with a `socketPortPayload`-byte data component, as
/// `send` puts them on the wire: a SocketPort sends it to a plain listening socket here.
func recordedSocketPortMessage() -> [UInt8]? {
  guard let (listener, port) = loopbackListener() else { return nil }
  defer { close(listener) }
  guard let remote = SocketPort(remoteWithTCPPort: port, host: "127.0.0.1"),
    remote.send(
      before: Date(timeIntervalSinceNow: 1),
      components: NSMutableArray(array: [Data(count: socketPortPayload)]), from: nil, reserved: 0)
  else { return nil }
  let connection = accept(listener, nil, nil)
  guard connection >= 0 else { return nil }
  defer { close(connection) }
  var message = [UInt8](repeating: 0, count: socketPortWireSize)
  return readFully(connection, &message) ? message : nil
}

/// Writes `bytes` to the pair's receiving port in one `write`, so that they arrive together.
func writeInOneCall(_ bytes: [UInt8], to pair: SocketPortPair) -> Bool {
  let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  defer { close(descriptor) }
  var address = loopbackAddress(port: pair.localPort)
  // The socket call takes the generic `sockaddr` pointer: rebound for the call only.
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
  }
  guard connected == 0 else { return false }
  // write(2) reads the bytes in place.
  let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
  return written == bytes.count
}

/// The child's work for `runloop-bench socketport MODE COUNT`; returns the line it prints.
///
/// - `one-in-flight`: COUNT messages, each sent after the previous one reached the delegate;
///   prints `rate R` (messages/s) or `note ...`.
/// - `burst`: COUNT messages sent back to back, then up to 2 s each for the delegate; prints
///   `delivered D of N` unless 2 messages share a read and the process traps (defect 2); with
///   20 or more that is all but certain.
/// - `one-read`: COUNT copies of a message SocketPort sent, written to it in one `write`;
///   prints `delivered D of N` (1 of 1, 2 of 3; with 2 or 4 the process traps, defect 2).
/// - `unix`: COUNT messages between SocketPorts on a Unix stream socket, on one thread;
///   prints how many sends were accepted and delivered (none: the EISCONN defect).
/// - `no-components`: COUNT messages without components, one at a time, up to 1 s each;
///   prints `delivered D of N` (D is 0, defect 1).
func socketPortChild(mode: String, count: Int) -> String {
  guard let pair = SocketPortPair() else { return "note SocketPort(tcpPort:) returned nil" }
  defer { pair.stop() }
  switch mode {
  case "one-in-flight":
    let start = nanosNow()
    for index in 0..<count {
      guard pair.send(payload: socketPortPayload) else { return "note send \(index) failed" }
      guard pair.receiver.each.wait(seconds: 2) else {
        return "note message \(index) was not delivered within 2 s"
      }
    }
    return "rate \(Double(count) / seconds(since: start))"
  case "burst":
    var sent = 0
    for _ in 0..<count where pair.send(payload: socketPortPayload) { sent += 1 }
    return "delivered \(pair.waitForDeliveries(count)) of \(count) (\(sent) sends accepted)"
  case "one-read":
    guard let message = recordedSocketPortMessage() else {
      return "note could not record a SocketPort message"
    }
    guard writeInOneCall(Array(repeating: message, count: count).flatMap { $0 }, to: pair) else {
      return "note could not write to the SocketPort"
    }
    return "delivered \(pair.waitForDeliveries(count)) of \(count)"
  case "no-components":
    var delivered = 0
    for _ in 0..<count {
      guard pair.send(payload: nil) else { break }
      if pair.receiver.each.wait(seconds: 1) { delivered += 1 }
    }
    return "delivered \(delivered) of \(count)"
  case "unix":
    return unixSocketPortSends(count)
  default:
    return "note unknown mode \(mode)"
  }
}

/// Sends `count` messages from a remote to a local SocketPort on a Unix stream socket.
func unixSocketPortSends(_ count: Int) -> String {
  let path = "/tmp/rlb-socketport-\(getpid()).sock"
  defer { unlink(path) }
  var address = sockaddr_un()
  address.sun_family = sa_family_t(AF_UNIX)
  // `sun_path` is a C array (a tuple in Swift): filled as bytes.
  withUnsafeMutableBytes(of: &address.sun_path) { bytes in
    for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
  }
  // SocketPort takes the address as the `sockaddr`'s bytes.
  let data = withUnsafeBytes(of: address) { Data($0) }
  let stream = Int32(SOCK_STREAM.rawValue)
  guard
    let local = SocketPort(protocolFamily: PF_UNIX, socketType: stream, protocol: 0, address: data)
  else { return "note SocketPort(protocolFamily: PF_UNIX...) returned nil" }
  let receiver = SocketPortReceiver()
  local.setDelegate(receiver)
  RunLoop.current.add(local, forMode: .default)
  let remote = SocketPort(
    remoteWithProtocolFamily: PF_UNIX, socketType: stream, protocol: 0, address: data)
  var accepted = 0
  for _ in 0..<count {
    let sent = remote.send(
      before: Date(timeIntervalSinceNow: 1),
      components: NSMutableArray(array: [Data(count: socketPortPayload)]), from: nil, reserved: 0)
    if sent { accepted += 1 }
    _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: sent ? 1 : 0))
  }
  return "\(accepted) of \(count) sends accepted, \(receiver.received.value) delivered"
}

/// What a `socketport` child did: the line it printed, or the signal that ended it.
struct SocketPortOutcome {
  var line: String
  var signal: Int32?

  /// The rate a `one-in-flight` child printed.
  var rate: Double? { line.hasPrefix("rate ") ? Double(line.dropFirst(5)) : nil }

  var summary: String {
    if let signal { return "the process died of signal \(signal) (a trap)" }
    return line.hasPrefix("note ") ? String(line.dropFirst(5)) : line
  }
}

/// Runs `runloop-bench socketport MODE COUNT` in a child process.
func socketPortInChild(mode: String, count: Int) -> SocketPortOutcome {
  let process = Process()
  let output = Pipe()
  process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
  process.arguments = ["socketport", mode, "\(count)"]
  process.standardOutput = output
  process.standardError = FileHandle.nullDevice
  do { try process.run() } catch { return SocketPortOutcome(line: "note no child: \(error)") }
  let data = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  let line = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
  return SocketPortOutcome(
    line: line,
    signal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil)
}
