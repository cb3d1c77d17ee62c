import Glibc
import RunLoopCore

/// Where a ``SocketSource`` listens or connects: a TCP address (IPv4 or IPv6 literal) or a
/// Unix-domain socket path.
///
/// ```swift
/// let local = SocketEndpoint.tcp(host: "127.0.0.1", port: 0)   // any free port
/// let unix = SocketEndpoint.unix(path: "/run/user/1000/app.sock")
/// ```
public enum SocketEndpoint: Sendable, Hashable, CustomStringConvertible {
  /// A TCP endpoint; `host` is a numeric IPv4 or IPv6 address (no name lookup).
  ///
  /// ```swift
  /// let endpoint = SocketEndpoint.tcp(host: "::1", port: 8080)
  /// ```
  case tcp(host: String, port: UInt16)
  /// A Unix-domain stream socket at `path`.
  ///
  /// ```swift
  /// let endpoint = SocketEndpoint.unix(path: "/run/user/1000/app.sock")
  /// ```
  case unix(path: String)

  /// `tcp 127.0.0.1:8080` or `unix /path`.
  ///
  /// ```swift
  /// print(SocketEndpoint.tcp(host: "127.0.0.1", port: 80))  // "tcp 127.0.0.1:80"
  /// ```
  public var description: String {
    switch self {
    case .tcp(let host, let port): "tcp \(host):\(port)"
    case .unix(let path): "unix \(path)"
    }
  }

  var domain: Int32 {
    switch self {
    case .tcp(let host, _): host.contains(":") ? AF_INET6 : AF_INET
    case .unix: AF_UNIX
    }
  }

  /// Calls `body` with the endpoint as a `sockaddr`. The socket calls take the address as a
  /// pointer to the generic `sockaddr`, so each concrete address is passed by pointer and
  /// rebound to it, for the length of the call only.
  func withAddress<Result>(
    _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
  ) throws(RunLoopError) -> Result {
    switch self {
    case .unix(let path):
      var (address, length) = try SocketCalls.address(for: path)
      return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
      }
    case .tcp(let host, let port) where domain == AF_INET6:
      var address = sockaddr_in6()
      address.sin6_family = sa_family_t(AF_INET6)
      address.sin6_port = port.bigEndian
      guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
        throw .invalidArgument("'\(host)' is not a numeric IPv6 address")
      }
      return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
      }
    case .tcp(let host, let port):
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = port.bigEndian
      guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
        throw .invalidArgument("'\(host)' is not a numeric IPv4 address")
      }
      return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
    }
  }
}
