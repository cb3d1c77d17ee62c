import Foundation
import RunLoopCore

/// A log shared by call-outs.
package final class Log: Sendable {
  package init() {}
  private let entries = GuardedState<[String]>([])
  package func append(_ entry: String) { entries.withLock { $0.append(entry) } }
  package var all: [String] { entries.withLock { $0 } }
}

/// A fresh path in the temporary directory.
package func temporaryPath(_ name: String) -> String {
  let directory = NSTemporaryDirectory()
  return "\(directory)/runloop-observers-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(name)"
}

/// A real deadline source (the Timers module's role): fires `handler` through
/// `withCallout(.timer, dueAt:)` every `interval`, `count` times.
package final class TickProvider: DeadlineSource, @unchecked Sendable {
  private let interval: Duration
  private let state: GuardedState<(next: ContinuousClock.Instant, remaining: Int)>
  private let handler: @Sendable () -> Void

  package init(interval: Duration, count: Int, handler: @escaping @Sendable () -> Void) {
    self.interval = interval
    self.state = GuardedState((ContinuousClock.now + interval, count))
    self.handler = handler
  }

  package func hasItems(in mode: ActiveMode) -> Bool {
    mode.mode == .default && state.withLock { $0.remaining > 0 }
  }

  package func nextDeadline(in mode: ActiveMode) -> Int64? {
    guard mode.mode == .default else { return nil }
    let next = state.withLock { $0.remaining > 0 ? $0.next : nil }
    return next.map(LoopClock.nanoseconds(of:))
  }

  package func fireDue(in mode: ActiveMode, now: Int64, on loop: EventRunLoop) {
    guard mode.mode == .default else { return }
    let now = LoopClock.instant(ofNanoseconds: now)
    let due = state.withLock { state -> ContinuousClock.Instant? in
      guard state.remaining > 0, state.next <= now else { return nil }
      let due = state.next
      state.remaining -= 1
      state.next = due + interval
      return due
    }
    guard let due else { return }
    loop.withCallout(.timer, name: "tick", dueAt: due, handler)
  }
}

/// A Unix datagram socket bound at a fresh path, for journal-absent and journal-stalled
/// tests; `close()` unbinds the descriptor (the file stays until `unlinkPath()`).
package final class DatagramSocket: @unchecked Sendable {
  package let path: String
  package private(set) var descriptor: Int32

  package init(path: String, receiveBuffer: Int32? = nil) {
    self.path = path
    descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
    precondition(descriptor >= 0)
    if var size = receiveBuffer {
      setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: bytes)
      raw[bytes.count] = 0
    }
    let status = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    precondition(status == 0, "bind \(path): \(errno)")
  }

  /// Reads every datagram waiting, without blocking.
  package func drain() -> [String] {
    var datagrams: [String] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
      if count <= 0 { break }
      datagrams.append(String(decoding: buffer[0..<count], as: UTF8.self))
    }
    return datagrams
  }

  package func close() {
    if descriptor >= 0 { Glibc.close(descriptor) }
    descriptor = -1
  }

  package func unlinkPath() { unlink(path) }

  deinit {
    close()
    unlinkPath()
  }
}
