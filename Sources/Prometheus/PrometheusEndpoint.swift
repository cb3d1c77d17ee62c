import CoreMetrics
import Glibc
import Prometheus
import RunLoopCore
import RunLoopPorts
import Synchronization

/// Serves a Prometheus registry over HTTP from a run loop: a listening ``/RunLoopPorts/SocketSource``
/// on the loop, and a small HTTP/1.1 responder that answers `GET` (and `HEAD`) of one path,
/// `/metrics` by default, with the registry in the text exposition format.
///
/// The loop that serves the metrics is the loop being measured, so a scrape is itself a
/// call-out in the trace and in the numbers (a source call-out named after the endpoint).
/// A web framework would bring an event loop of its own (SwiftNIO's) beside ours: a second
/// loop, a second set of threads, and a scrape that never shows in the loop's own trace; a
/// scraper needs one request line and one response, which this responder gives.
///
/// ```swift
/// let registry = PrometheusCollectorRegistry()
/// let metrics = LoopMetrics(exportingTo: PrometheusEndpoint.metricsFactory(registry: registry))
/// metrics.attachToAllLoops()
/// let endpoint = try PrometheusEndpoint(
///   listeningOn: PrometheusEndpoint.address("127.0.0.1:9464"), registry: registry)
/// try endpoint.add(to: .main, mode: .common)
/// ```
///
/// Each connection carries one request and is closed after the response (`Connection:
/// close`), as Prometheus's scraper is content with; at most ``maximumConnections`` are open
/// at once, and a head over 8 KiB is answered 431.
public final class PrometheusEndpoint: Sendable {
  /// The registry served.
  ///
  /// ```swift
  /// let text = endpoint.registry.emitToString()
  /// ```
  public let registry: PrometheusCollectorRegistry
  /// The path served (`/metrics`); every other path is answered 404.
  ///
  /// ```swift
  /// print("http://127.0.0.1:\(endpoint.localPort!)\(endpoint.path)")
  /// ```
  public let path: String
  /// Connections open at once beyond which a new one is closed at accept.
  ///
  /// ```swift
  /// let limit = PrometheusEndpoint.maximumConnections
  /// ```
  public static let maximumConnections = 32

  private let listener: SocketSource
  private let beforeScrape: (@Sendable () -> Void)?
  private let served = Atomic<Int>(0)
  // Guarded by its own lock: where the listener was added and the open connections.
  private let state = GuardedState(State())

  private struct State {
    var placement: (loop: EventRunLoop, mode: LoopMode)?
    var connections: [ObjectIdentifier: SocketSource] = [:]
    var closed = false
  }

  /// Listens on `endpoint`; nothing is served until ``add(to:mode:)``.
  ///
  /// - Parameters:
  ///   - endpoint: where to listen (``address(_:)`` reads `host:port`).
  ///   - registry: what to serve.
  ///   - path: the path to answer.
  ///   - beforeScrape: called on the loop's thread before each response is made, with no
  ///     lock held: the place to bring gauges and counters up to date from numbers kept
  ///     elsewhere (a watchdog's stall count, a sink's drops).
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for a bad address or a path
  ///   that does not start with `/`; ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when
  ///   `bind` or `listen` fails (the address is taken, or not this host's).
  ///
  /// ```swift
  /// let endpoint = try PrometheusEndpoint(
  ///   listeningOn: .tcp(host: "127.0.0.1", port: 0), registry: registry)
  /// ```
  public init(
    listeningOn endpoint: SocketEndpoint, registry: PrometheusCollectorRegistry,
    path: String = "/metrics", beforeScrape: (@Sendable () -> Void)? = nil
  ) throws(RunLoopError) {
    guard path.hasPrefix("/") else {
      throw .invalidArgument("the metrics path must start with '/', not '\(path)'")
    }
    self.registry = registry
    self.path = path
    self.beforeScrape = beforeScrape
    // The accept call-out reaches the endpoint through this box, set just below: the
    // listener exists before `self` is complete.
    let owner = EndpointBox()
    listener = try SocketSource(listeningOn: endpoint, name: "metrics \(endpoint)") { _, fd in
      owner.endpoint?.accepted(fd)
    }
    owner.endpoint = self
  }

  /// The TCP port listened on (useful after asking for port 0).
  ///
  /// ```swift
  /// print(endpoint.localPort!)
  /// ```
  public var localPort: UInt16? { listener.localPort }

  /// Responses made so far with the registry in them (200s).
  ///
  /// ```swift
  /// let scrapes = endpoint.scrapesServed
  /// ```
  public var scrapesServed: Int { served.load(ordering: .relaxed) }

  /// Serves on `loop` in `mode`: the listener and every connection are sources of that loop,
  /// so each scrape is a call-out on it.
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidState`` when already added;
  ///   ``/RunLoopCore/RunLoopError/Code/invalidated`` once closed.
  ///
  /// ```swift
  /// try endpoint.add(to: .main, mode: .common)
  /// ```
  public func add(to loop: EventRunLoop, mode: LoopMode) throws(RunLoopError) {
    let placed = state.withLock { state -> Bool in
      guard state.placement == nil else { return false }
      state.placement = (loop, mode)
      return true
    }
    guard placed else { throw .invalidState("the metrics endpoint is already on a loop") }
    try listener.add(to: loop, mode: mode)
  }

  /// Stops listening and closes every open connection.
  ///
  /// ```swift
  /// endpoint.close()
  /// ```
  public func close() {
    let open = state.withLock { state -> [SocketSource] in
      state.closed = true
      defer { state.connections = [:] }
      return Array(state.connections.values)
    }
    listener.invalidate()
    for connection in open { connection.invalidate() }
  }

  // MARK: Loop thread

  private func accepted(_ descriptor: Int32) {
    let placement = state.withLock { state in
      state.closed || state.connections.count >= Self.maximumConnections ? nil : state.placement
    }
    guard let placement else {
      Glibc.close(descriptor)
      return
    }
    let exchange = HTTPExchange()
    let connection = SocketSource(
      connected: descriptor, ownership: .owned, name: "metrics connection",
      onData: { [self] socket, bytes in received(bytes, on: socket, exchange) },
      onWritable: { [self] socket in
        // The response is out: one request a connection.
        forget(socket)
        socket.invalidate()
      },
      onClose: { [self] socket, _ in forget(socket) })
    state.withLock { $0.connections[ObjectIdentifier(connection)] = connection }
    do {
      try connection.add(to: placement.loop, mode: placement.mode)
    } catch {
      forget(connection)
      connection.invalidate()
    }
  }

  private func received(_ bytes: [UInt8], on socket: SocketSource, _ exchange: HTTPExchange) {
    guard !exchange.answered else { return }
    exchange.buffer += bytes
    let response: [UInt8]
    switch HTTPRequestHead.parse(exchange.buffer) {
    case .incomplete: return
    case .malformed: response = Self.response(status: "400 Bad Request", body: "bad request\n")
    case .tooLarge:
      response = Self.response(
        status: "431 Request Header Fields Too Large", body: "request head too large\n")
    case .request(let head):
      response = respond(to: head)
    }
    exchange.answered = true
    exchange.buffer = []
    socket.write(response)
  }

  private func respond(to head: HTTPRequestHead) -> [UInt8] {
    guard head.method == "GET" || head.method == "HEAD" else {
      return Self.response(
        status: "405 Method Not Allowed", body: "only GET and HEAD\n",
        extraHeaders: "Allow: GET, HEAD\r\n")
    }
    guard head.path == path else {
      return Self.response(status: "404 Not Found", body: "metrics are at \(path)\n")
    }
    // User code, called with no lock of ours held.
    beforeScrape?()
    let body = registry.emitToBuffer()
    served.add(1, ordering: .relaxed)
    return Self.response(
      status: "200 OK", body: body, contentType: "text/plain; version=0.0.4; charset=utf-8",
      headOnly: head.method == "HEAD")
  }

  private func forget(_ socket: SocketSource) {
    state.withLock { _ = $0.connections.removeValue(forKey: ObjectIdentifier(socket)) }
  }

  private static func response(
    status: String, body: String, extraHeaders: String = ""
  ) -> [UInt8] {
    response(
      status: status, body: Array(body.utf8), contentType: "text/plain; charset=utf-8",
      extraHeaders: extraHeaders)
  }

  private static func response(
    status: String, body: [UInt8], contentType: String, extraHeaders: String = "",
    headOnly: Bool = false
  ) -> [UInt8] {
    let head =
      "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
      + extraHeaders + "Connection: close\r\n\r\n"
    return Array(head.utf8) + (headOnly ? [] : body)
  }
}

/// The endpoint, reached by its listener's accept call-out; weak, so that the listener does
/// not keep the endpoint alive.
private final class EndpointBox: @unchecked Sendable {
  // Unchecked: set once in the endpoint's init, before the listener is on a loop.
  weak var endpoint: PrometheusEndpoint?
}

/// One connection's request bytes so far; touched on the loop's thread only.
final class HTTPExchange: @unchecked Sendable {
  // Unchecked: only the connection's call-outs, all on one loop thread, touch it.
  var buffer: [UInt8] = []
  var answered = false
}
