import Glibc

/// One HTTP exchange over a real TCP connection to 127.0.0.1: sends `request` as given (in
/// pieces, when `split` says where), reads until the server closes, and returns the status
/// code, the headers (names in lower case) and the body. `nil` when the connection failed or
/// the answer is not HTTP/1.1.
///
/// ```swift
/// let reply = httpExchange(port: 9464, request: "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
/// ```
public func httpExchange(port: UInt16, request: String, split: [Int] = []) -> (
  status: Int, headers: [String: String], body: String
)? {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { return nil }
  defer { close(fd) }
  var timeout = timeval(tv_sec: 10, tv_usec: 0)
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = port.bigEndian
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
  }
  guard connected == 0 else { return nil }
  let bytes = Array(request.utf8)
  var start = 0
  for end in split + [bytes.count] where end > start {
    let sent = bytes[start..<end].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
    guard sent == end - start else { return nil }
    start = end
    // Lets the server read each piece on its own.
    usleep(20_000)
  }
  var received: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65536)
  while true {
    let count = read(fd, &chunk, chunk.count)
    if count < 0 && errno == EINTR { continue }
    if count <= 0 { break }
    received += chunk[0..<count]
  }
  let text = String(decoding: received, as: UTF8.self)
  guard let headEnd = text.range(of: "\r\n\r\n") else { return nil }
  let lines = text[..<headEnd.lowerBound].split(separator: "\r\n")
  guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
    let status = Int(statusLine.dropFirst(9).prefix(3))
  else { return nil }
  var headers: [String: String] = [:]
  for line in lines.dropFirst() {
    guard let colon = line.firstIndex(of: ":") else { continue }
    headers[line[..<colon].lowercased()] =
      String(line[line.index(after: colon)...])
      .trimmingPrefix(" ").description
  }
  return (status, headers, String(text[headEnd.upperBound...]))
}

/// `GET path` with the headers a scraper sends.
///
/// ```swift
/// let scrape = try #require(httpGet(port: endpoint.port))
/// ```
public func httpGet(port: UInt16, _ path: String = "/metrics") -> (
  status: Int, headers: [String: String], body: String
)? {
  httpExchange(
    port: port,
    request: "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n")
}

/// The body of a `GET path` answered `200`, asking the server to close the connection (as a
/// query of Prometheus's HTTP API does), or `nil`.
///
/// ```swift
/// let json = httpGetBody(port: 9090, path: "/api/v1/query?query=up")
/// ```
public func httpGetBody(port: UInt16, path: String) -> String? {
  guard
    let reply = httpExchange(
      port: port,
      request: "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    reply.status == 200
  else { return nil }
  return reply.body
}
