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
    try port.send(msgid: UInt32(truncatingIfNeeded: index), before: .now + .seconds(5))
  }
  done.wait()
  let rate = Double(count) / seconds(since: start)
  port.invalidate()
  try thread.stop()
  return rate
}

/// Foundation's SocketPort: a local TCP port on a CFRunLoop thread, messages sent from here.
final class SocketPortReceiver: NSObject, PortDelegate, @unchecked Sendable {
  let received = Counter()
  let done = Latch()
  let expected: Int
  init(expected: Int) { self.expected = expected }
  func handle(_ message: PortMessage) {
    received.add()
    if received.value == expected { done.signal() }
  }
}

func socketPortMessages(_ count: Int, timeout: Double) -> (rate: Double?, note: String) {
  guard let receivePort = SocketPort(tcpPort: 0) else {
    return (nil, "SocketPort(tcpPort: 0) returned nil")
  }
  let receiver = SocketPortReceiver(expected: count)
  receivePort.setDelegate(receiver)
  let ready = Latch()
  let stopFlag = Counter()
  let portHandle = CFHandle(object: receivePort)
  let thread = Thread {
    RunLoop.current.add(portHandle.object, forMode: .default)
    ready.signal()
    while stopFlag.value == 0 {
      _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
    }
  }
  thread.start()
  ready.wait()
  guard let sendPort = SocketPort(remoteWithTCPPort: receivePort.tcpPort, host: "127.0.0.1")
  else {
    stopFlag.add()
    return (nil, "SocketPort(remoteWithTCPPort:host:) returned nil")
  }
  let start = nanosNow()
  var sent = 0
  for _ in 0..<count {
    if sendPort.send(before: Date(timeIntervalSinceNow: 1), components: nil, from: nil, reserved: 0)
    {
      sent += 1
    }
  }
  let arrived = receiver.done.wait(seconds: timeout)
  let elapsed = seconds(since: start)
  stopFlag.add()
  if !arrived {
    return (
      nil,
      "SocketPort delivered \(receiver.received.value) of \(count) messages (\(sent) sends accepted)"
        + " within \(Int(timeout)) s"
    )
  }
  return (Double(count) / elapsed, "")
}

extension SocketPort {
  fileprivate var tcpPort: UInt16 {
    address.withUnsafeBytes { bytes in
      UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
    }
  }
}

/// Runs `socketPortMessages` in a child process and reads its result; a crash is reported.
func socketPortMessagesInChild(_ count: Int) -> (rate: Double?, note: String) {
  let process = Process()
  let output = Pipe()
  process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
  process.arguments = ["socketport", "\(count)"]
  process.standardOutput = output
  process.standardError = FileHandle.nullDevice
  do { try process.run() } catch { return (nil, "could not start the child: \(error)") }
  let data = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
  if process.terminationReason == .uncaughtSignal {
    return (
      nil,
      "the process crashed (signal \(process.terminationStatus)) while SocketPort delivered "
        + "\(count) messages: a trap in SocketPort.socketDidReceiveData (Data subscript) in "
        + "swift-corelibs-foundation"
    )
  }
  if text.hasPrefix("rate "), let rate = Double(text.dropFirst(5)) { return (rate, "") }
  return (nil, text.hasPrefix("note ") ? String(text.dropFirst(5)) : "no result (\(text))")
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
