import Glibc
import RunLoopCore
import RunLoopPorts

extension PrometheusEndpoint {
  /// Reads an address as a command-line flag gives it: `host:port` with a numeric IPv4 host
  /// (`127.0.0.1:9464`), `[host]:port` with an IPv6 one (`[::1]:9464`), or `:port` for
  /// loopback. Port 0 asks for any free port (``localPort`` tells which).
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument``, saying what is wrong.
  ///
  /// ```swift
  /// let endpoint = try PrometheusEndpoint.address("127.0.0.1:9464")
  /// ```
  public static func address(_ text: String) throws(RunLoopError) -> SocketEndpoint {
    let host: Substring
    let port: Substring
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]"),
        text[text.index(after: close)...].hasPrefix(":")
      else {
        throw .invalidArgument("'\(text)' is not [IPv6 address]:port (for example [::1]:9464)")
      }
      host = text[text.index(after: text.startIndex)..<close]
      port = text[text.index(close, offsetBy: 2)...]
    } else {
      guard let colon = text.lastIndex(of: ":") else {
        throw .invalidArgument("'\(text)' has no port: give host:port (for example 127.0.0.1:9464)")
      }
      host = text[..<colon]
      port = text[text.index(after: colon)...]
      if host.contains(":") {
        throw .invalidArgument("'\(text)': put an IPv6 address in brackets ([::1]:9464)")
      }
    }
    guard let number = UInt16(port), port.allSatisfy(\.isASCII) else {
      throw .invalidArgument("'\(port)' in '\(text)' is not a port number (0 to 65535)")
    }
    let address = host.isEmpty ? "127.0.0.1" : String(host)
    let family = text.hasPrefix("[") || address.contains(":") ? AF_INET6 : AF_INET
    var scratch = [UInt8](repeating: 0, count: 16)
    guard inet_pton(family, address, &scratch) == 1 else {
      throw .invalidArgument(
        "'\(address)' in '\(text)' is not a numeric \(family == AF_INET6 ? "IPv6" : "IPv4") "
          + "address (names are not looked up)")
    }
    return .tcp(host: address, port: number)
  }
}
