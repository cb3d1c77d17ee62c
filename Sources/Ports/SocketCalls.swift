import CRunLoopLinux
import Glibc
import RunLoopCore

/// The socket system calls the named ports and socket sources share, with their errors
/// turned into ``RunLoopError``s.
enum SocketCalls {
  /// How long a listener stops accepting after `accept` failed for lack of descriptors or
  /// memory.
  static let acceptBackoff: Duration = .milliseconds(100)

  /// Whether an `accept` error means "out of descriptors or memory": the pending connection
  /// stays queued, so the listener stays readable and a level-triggered loop would spin.
  static func isResourceShortage(_ code: Int32) -> Bool {
    code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM
  }

  /// Stops read interest on `listener` and turns it back on after ``acceptBackoff``. Call
  /// from the listener's call-out, on its loop's thread.
  static func pauseAccepting(_ listener: DescriptorSource) {
    guard (try? listener._setWantsReadable(false)) != nil else { return }
    EventRunLoop.current.addDeadlineSource(
      ListenerResumer(listener, at: .now + acceptBackoff))
  }

  static func address(for path: String) throws(RunLoopError) -> (sockaddr_un, socklen_t) {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard bytes.count < capacity else {
      throw .invalidArgument("socket path '\(path)' is longer than \(capacity - 1) bytes")
    }
    // `sun_path` is a C array, a tuple in Swift: filled as raw bytes.
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: bytes)
      raw[bytes.count] = 0
    }
    let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1
    return (address, socklen_t(length))
  }

  /// A non-blocking, close-on-exec socket.
  static func socket(domain: Int32, type: Int32) throws(RunLoopError) -> Int32 {
    let descriptor = Glibc.socket(
      domain, type | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw .systemCall("socket", errno: errno) }
    return descriptor
  }

  static func bind(_ descriptor: Int32, path: String) throws(RunLoopError) {
    var (address, length) = try address(for: path)
    // bind(2) takes the generic `sockaddr` pointer: rebound for the call only.
    let status = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, length) }
    }
    guard status == 0 else { throw .systemCall("bind(\(path))", errno: errno) }
  }

  /// Starts a non-blocking connect; returns `errno` (0 when connected at once, `EINPROGRESS`
  /// or `EAGAIN` while pending).
  static func startConnect(_ descriptor: Int32, path: String) throws(RunLoopError) -> Int32 {
    var (address, length) = try address(for: path)
    // connect(2) takes the generic `sockaddr` pointer: rebound for the call only.
    let status = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(descriptor, $0, length)
      }
    }
    return status == 0 ? 0 : errno
  }

  /// The pending error of a socket (`SO_ERROR`), which ends a non-blocking connect.
  static func pendingError(_ descriptor: Int32) -> Int32 {
    var value: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
    return value
  }

  /// The peer's process and user id (SO_PEERCRED).
  static func peer(of descriptor: Int32) -> (pid: pid_t, uid: uid_t)? {
    var pid: pid_t = 0
    var uid: uid_t = 0
    var gid: gid_t = 0
    guard crl_peer_credentials(descriptor, &pid, &uid, &gid) == 0 else { return nil }
    return (pid, uid)
  }

  /// Whether `descriptor` has bytes (or an end of file) to read right now.
  static func hasInput(_ descriptor: Int32) -> Bool {
    var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, 0) > 0
  }

  /// Waits with `poll` until `descriptor` is ready for `events` or `deadline` passes.
  /// Returns the `revents`, or 0 at the deadline. The deadline is `poll`'s timeout, not a
  /// loop timer: the calling thread is blocked here and runs no loop that could fire one.
  static func wait(_ descriptor: Int32, for events: Int16, until deadline: ContinuousClock.Instant)
    -> Int16
  {
    while true {
      let remaining = ContinuousClock.now.duration(to: deadline)
      guard remaining > .zero else { return 0 }
      let milliseconds =
        remaining.components.seconds * 1000 + remaining.components.attoseconds
        / 1_000_000_000_000_000
      var entry = pollfd(fd: descriptor, events: events, revents: 0)
      let count = poll(&entry, 1, Int32(clamping: max(1, milliseconds + 1)))
      if count > 0 { return entry.revents }
      if count < 0 && errno != EINTR { return Int16(POLLERR) }
    }
  }

  /// Writes all of `bytes` before `deadline` (never raising SIGPIPE).
  static func sendAll(
    _ descriptor: Int32, _ bytes: [UInt8], until deadline: ContinuousClock.Instant
  )
    throws(RunLoopError)
  {
    var offset = 0
    while offset < bytes.count {
      // send(2) reads the rest of the bytes in place.
      let written = bytes.withUnsafeBytes { raw in
        Glibc.send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
      }
      if written > 0 {
        offset += written
        continue
      }
      let code = errno
      if written < 0 && (code == EAGAIN || code == EINTR) {
        guard wait(descriptor, for: Int16(POLLOUT), until: deadline) != 0 else {
          throw .timedOut("the peer did not take the message before the send timeout")
        }
        continue
      }
      if code == EPIPE || code == ECONNRESET {
        throw .peerClosed("the peer closed the connection while a message was sent")
      }
      throw .systemCall("send", errno: code)
    }
  }
}
