import Glibc

/// systemd's readiness protocol, written here instead of calling libsystemd's `sd_notify`:
/// the protocol is one datagram of `KEY=VALUE` lines to the Unix socket named by
/// `NOTIFY_SOCKET` (a path, or an abstract name when it starts with `@`), so it needs no
/// library and no change to the shared `CSystemdJournal` shim. Outside systemd
/// (`NOTIFY_SOCKET` unset) every call does nothing.
///
/// The demo sends `READY=1` once its workers have checked in, `STOPPING=1` when shutdown
/// begins and, when systemd asked for a watchdog (`WATCHDOG_USEC`), `WATCHDOG=1` at half
/// that period from a timer on the main run loop: if the main loop ever stalls, the pings
/// stop and systemd restarts the service.
struct SystemdNotifier: Sendable {
  /// The socket address from `NOTIFY_SOCKET`, or `nil` when not run by systemd.
  let socketPath: String?
  /// Half the watchdog period systemd asked for (`WATCHDOG_USEC`), or `nil`.
  let watchdogInterval: Duration?

  /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from the environment.
  static func fromEnvironment() -> SystemdNotifier {
    let socket = environment("NOTIFY_SOCKET").flatMap { $0.isEmpty ? nil : $0 }
    var interval: Duration?
    if let text = environment("WATCHDOG_USEC"), let microseconds = Int64(text), microseconds > 0 {
      // WATCHDOG_PID, when set, names the process the watchdog is meant for.
      let forUs = environment("WATCHDOG_PID").flatMap { Int32($0) }.map { $0 == getpid() } ?? true
      if forUs { interval = .microseconds(microseconds / 2) }
    }
    return SystemdNotifier(socketPath: socket, watchdogInterval: interval)
  }

  /// Sends `state` (for example `"READY=1"`); returns whether a datagram was sent.
  @discardableResult
  func notify(_ state: String) -> Bool {
    guard let socketPath, socketPath.utf8.count < 108 else { return false }
    let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    var pathBytes = Array(socketPath.utf8)
    if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }  // abstract namespace
    // `sun_path` is a C array (a tuple in Swift), and `sendto(2)` takes a `sockaddr`
    // pointer: both are reached through raw pointers for the length of the calls.
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
      for (index, byte) in pathBytes.enumerated() { buffer[index] = byte }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count)
    let payload = Array(state.utf8)
    let sent = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
        sendto(descriptor, payload, payload.count, Int32(MSG_NOSIGNAL), socketAddress, length)
      }
    }
    return sent == payload.count
  }

  private static func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
  }
}
