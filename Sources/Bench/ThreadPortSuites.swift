import CRunLoopLinux
import CoreFoundation
import Foundation
import Glibc
import RunLoopCore
import RunLoopPorts
import Synchronization

// MARK: thread costs

/// Microseconds to create, start and join one RunLoopThread whose body touches its loop.
func ourThreadOnce(_ index: Int) throws -> Double {
  let start = nanosNow()
  let thread = RunLoopThread(name: "t\(index)") { _ in _ = EventRunLoop.current }
  try thread.start()
  try thread.join()
  return Double(nanosNow() - start) / 1000
}

/// Foundation's Thread is not joinable: wait for the body's last statement instead.
func cfThreadOnce(_ index: Int) -> Double {
  let start = nanosNow()
  let done = Latch()
  let thread = Thread {
    _ = CFRunLoopGetCurrent()
    done.signal()
  }
  thread.name = "t\(index)"
  thread.start()
  done.wait()
  return Double(nanosNow() - start) / 1000
}

/// The floor: pthread_create and pthread_join of an empty body.
func floorThreadOnce() -> Double {
  let start = nanosNow()
  BareThread {}.join()
  return Double(nanosNow() - start) / 1000
}

struct ThreadMemory {
  var virtualKB: Double
  var residentKB: Double
  var heapBytes: Double
  var descriptors: Double
}

func openDescriptors() -> Int {
  (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
}

/// What `count` parked threads, each running its own loop, add to the process, per thread.
func ourThreadMemory(_ count: Int) throws -> ThreadMemory {
  let vm = procStatus("VmSize")
  let rss = procStatus("VmRSS")
  let heap = heapBytesInUse()
  let fds = openDescriptors()
  var threads: [OurLoopThread] = []
  for index in 0..<count { threads.append(try OurLoopThread(name: "m\(index)")) }
  let result = ThreadMemory(
    virtualKB: Double(procStatus("VmSize") - vm) / Double(count),
    residentKB: Double(procStatus("VmRSS") - rss) / Double(count),
    heapBytes: Double(heapBytesInUse() - heap) / Double(count),
    descriptors: Double(openDescriptors() - fds) / Double(count))
  for thread in threads { try thread.stop() }
  return result
}

func cfThreadMemory(_ count: Int) -> ThreadMemory {
  let vm = procStatus("VmSize")
  let rss = procStatus("VmRSS")
  let heap = heapBytesInUse()
  let fds = openDescriptors()
  var threads: [CFLoopThread] = []
  for index in 0..<count { threads.append(CFLoopThread(name: "cf\(index)")) }
  let result = ThreadMemory(
    virtualKB: Double(procStatus("VmSize") - vm) / Double(count),
    residentKB: Double(procStatus("VmRSS") - rss) / Double(count),
    heapBytes: Double(heapBytesInUse() - heap) / Double(count),
    descriptors: Double(openDescriptors() - fds) / Double(count))
  for thread in threads { thread.stop() }
  return result
}

// MARK: in-process ports

/// Messages/s from one sending thread to a port on another thread's loop.
func ourPortMessages(_ count: Int) throws -> Double {
  let received = Counter()
  let done = Latch()
  let port = try InProcessPort(name: "bench", capacity: 1024) { _ in
    received.add()
    if received.value == count { done.signal() }
  }
  let thread = try OurLoopThread(name: "port") { loop in try port.add(to: loop, mode: .default) }
  let start = nanosNow()
  for index in 0..<count {
    try port.send(msgid: PortMessageID(truncatingIfNeeded: index), before: .now + .seconds(5))
  }
  done.wait()
  let rate = Double(count) / seconds(since: start)
  port.invalidate()
  try thread.stop()
  return rate
}

/// Messages/s through an InProcessPort with one message in flight: the sender waits until
/// the handler has seen each message before it sends the next (the only way Foundation's
/// SocketPort delivers on Linux, see FoundationSocketPort.swift). Each message carries one
/// data component of `socketPortPayload` bytes, as the SocketPort messages do.
func ourPortMessagesOneInFlight(_ count: Int) throws -> Double {
  let each = Latch()
  let port = try InProcessPort(name: "bench", capacity: 1024) { _ in each.signal() }
  let thread = try OurLoopThread(name: "port") { loop in try port.add(to: loop, mode: .default) }
  let payload = [UInt8](repeating: 0, count: socketPortPayload)
  let start = nanosNow()
  for index in 0..<count {
    try port.send(
      msgid: PortMessageID(truncatingIfNeeded: index), components: [payload],
      before: .now + .seconds(5))
    each.wait()
  }
  let rate = Double(count) / seconds(since: start)
  port.invalidate()
  try thread.stop()
  return rate
}

/// Messages/s over loopback TCP into a SocketSource on our loop, one message in flight, the
/// same transport and bytes as SocketPort: a plain blocking socket on the sending thread
/// writes `socketPortWireSize` bytes; the connection's `onData` counts whole messages.
func ourSocketMessagesOneInFlight(_ count: Int) throws -> Double {
  let each = Latch()
  let connections = GuardedState<[SocketSource]>([])
  let listener = try SocketSource(listeningOn: .tcp(host: "127.0.0.1", port: 0)) { _, fd in
    let buffered = GuardedState(0)
    let connection = SocketSource(
      connected: fd, ownership: .owned,
      onData: { _, bytes in
        let messages = buffered.withLock { total -> Int in
          total += bytes.count
          defer { total %= socketPortWireSize }
          return total / socketPortWireSize
        }
        for _ in 0..<messages { each.signal() }
      })
    connections.withLock { $0.append(connection) }
    try? connection.add(to: .current, mode: .default)
  }
  let thread = try OurLoopThread(name: "socket") { loop in
    try listener.add(to: loop, mode: .default)
  }
  defer {
    for connection in connections.withLock({ $0 }) { connection.invalidate() }
    listener.invalidate()
    try? thread.stop()
  }
  let descriptor = try connectedLoopbackSocket(port: listener.localPort ?? 0)
  defer { close(descriptor) }
  return try sendOneAtATime(count, to: descriptor, each: each)
}

/// The floor of the loopback TCP row: the same bytes read by a bare thread blocked in
/// `read`, no run loop.
func floorSocketMessagesOneInFlight(_ count: Int) throws -> Double {
  guard let (listener, port) = loopbackListener() else {
    throw RunLoopError.invalidState("cannot listen on loopback")
  }
  defer { close(listener) }
  let descriptor = try connectedLoopbackSocket(port: port)
  defer { close(descriptor) }
  let connection = accept(listener, nil, nil)
  guard connection >= 0 else { throw RunLoopError.invalidState("accept failed") }
  let each = Latch()
  let reader = BareThread {
    var message = [UInt8](repeating: 0, count: socketPortWireSize)
    while readFully(connection, &message) { each.signal() }
  }
  defer {
    shutdown(connection, Int32(SHUT_RDWR))
    reader.join()
    close(connection)
  }
  return try sendOneAtATime(count, to: descriptor, each: each)
}

/// A blocking TCP socket connected to 127.0.0.1:`port`.
func connectedLoopbackSocket(port: UInt16) throws -> Int32 {
  let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  var address = loopbackAddress(port: port)
  // The socket call takes the generic `sockaddr` pointer: rebound for the call only.
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
  }
  guard connected == 0 else {
    close(descriptor)
    throw RunLoopError.invalidState("cannot connect to 127.0.0.1:\(port)")
  }
  return descriptor
}

/// Messages/s of `count` SocketPort-sized writes to `descriptor`, each after `each` was
/// signalled for the previous one.
func sendOneAtATime(_ count: Int, to descriptor: Int32, each: Latch) throws -> Double {
  let message = [UInt8](repeating: 0, count: socketPortWireSize)
  let start = nanosNow()
  for _ in 0..<count {
    guard writeFully(descriptor, message) else {
      throw RunLoopError.invalidState("write to a loopback connection failed")
    }
    each.wait()
  }
  return Double(count) / seconds(since: start)
}

/// Runs the thread-memory measurement of one side in a fresh child process.
func threadMemoryInChild(_ side: String, count: Int) throws -> ThreadMemory {
  let process = Process()
  let output = Pipe()
  process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
  process.arguments = ["thread-memory", side, "\(count)"]
  process.standardOutput = output
  try process.run()
  let data = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  let numbers = String(decoding: data, as: UTF8.self).split(separator: " ").compactMap {
    Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
  }
  guard numbers.count == 4 else {
    throw RunLoopError.invalidState("thread-memory child printed \(numbers)")
  }
  return ThreadMemory(
    virtualKB: numbers[0], residentKB: numbers[1], heapBytes: numbers[2], descriptors: numbers[3])
}
