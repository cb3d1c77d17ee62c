import Glibc
import Prometheus
import RunLoopCore
import RunLoopObservers
import RunLoopPorts
import RunLoopPrometheus
import RunLoopTestSupport
import Testing

@Suite("Prometheus endpoint on a run loop")
struct PrometheusEndpointTests {
  /// A loop thread measured into `registry` and serving it on an ephemeral port.
  final class Served: Sendable {
    let registry = PrometheusCollectorRegistry()
    let metrics: LoopMetrics
    let endpoint: PrometheusEndpoint
    let thread: RunLoopThread
    let source = CustomInputSource(name: "work") {}
    let scrapeHooks = GuardedState(0)

    init() throws {
      metrics = LoopMetrics(exportingTo: PrometheusEndpoint.metricsFactory(registry: registry))
      let hooks = scrapeHooks
      endpoint = try PrometheusEndpoint(
        listeningOn: .tcp(host: "127.0.0.1", port: 0), registry: registry
      ) { hooks.withLock { $0 += 1 } }
      let (metrics, endpoint, source) = (self.metrics, self.endpoint, self.source)
      thread = try startLoopThread(name: "served") { loop in
        metrics.attach(to: loop)
        try loop.add(source, mode: .default)
        try endpoint.add(to: loop, mode: .default)
      }
    }

    var port: UInt16 { endpoint.localPort! }

    func stop() {
      endpoint.close()
      stopLoopThread(thread)
    }
  }

  @Test func aScrapeServesUtilizationAndDelaysByKindOfTheLoopThatServesIt() throws {
    let served = try Served()
    defer { served.stop() }
    // Five custom-source signals, each performed before the next: five `source` delays.
    for _ in 1...5 {
      let before =
        served.metrics.snapshot(of: served.thread.runLoop)?.callouts["source"]?.count ?? 0
      served.source.signalAndWakeUp()
      #expect(
        eventually {
          (served.metrics.snapshot(of: served.thread.runLoop)?.callouts["source"]?.count ?? 0)
            > before
        })
    }
    let loop = served.thread.runLoop.id
    // A first scrape wakes the loop (its accept and read are call-outs); the second sees
    // the sleep after them, which sets the utilization gauge.
    _ = httpGet(port: served.port)
    let response = try #require(httpGet(port: served.port))
    #expect(response.status == 200)
    #expect(response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
    #expect(response.headers["content-length"] == String(response.body.utf8.count))
    let lines = response.body.split(separator: "\n").map(String.init)
    #expect(lines.contains("# TYPE runloop_utilization gauge"))
    #expect(lines.contains { $0.hasPrefix("runloop_utilization{loop=\"\(loop)\"} ") })
    #expect(lines.contains("# TYPE runloop_callout_delay_seconds histogram"))
    #expect(lines.contains("# TYPE runloop_iterations_total counter"))
    #expect(lines.contains("# TYPE runloop_perform_queue_depth gauge"))
    let delayCount = lines.first {
      $0.hasPrefix("runloop_callout_delay_seconds_count{")
        && $0.contains("kind=\"source\"") && $0.contains("loop=\"\(loop)\"")
    }
    #expect(delayCount?.split(separator: " ").last == "5", "\(lines)")
    // The loop's scale of buckets: the first one is 10 µs.
    #expect(
      lines.contains {
        $0.hasPrefix("runloop_callout_delay_seconds_bucket{") && $0.contains("le=\"0.00001\"")
      })
    #expect(served.endpoint.scrapesServed == 2)
    #expect(served.scrapeHooks.withLock { $0 } == 2)
  }

  @Test func theScrapeIsACalloutOfTheServingLoop() throws {
    let served = try Served()
    defer { served.stop() }
    let before = served.metrics.snapshot(of: served.thread.runLoop)?.callouts["port"]?.count ?? 0
    _ = try #require(httpGet(port: served.port))
    let after = served.metrics.snapshot(of: served.thread.runLoop)?.callouts["port"]?.count ?? 0
    // At least the accept, the request's read and the response's write.
    #expect(after - before >= 3)
  }

  @Test func otherPathsMethodsAndMalformedRequestsGetTheirStatusAndNoMetrics() throws {
    let served = try Served()
    defer { served.stop() }
    let notFound = try #require(httpGet(port: served.port, "/other"))
    #expect(notFound.status == 404)
    #expect(notFound.body == "metrics are at /metrics\n")
    let post = try #require(
      httpExchange(
        port: served.port,
        request: "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"))
    #expect(post.status == 405)
    #expect(post.headers["allow"] == "GET, HEAD")
    let garbage = try #require(httpExchange(port: served.port, request: "hello\r\n\r\n"))
    #expect(garbage.status == 400)
    let huge = try #require(
      httpExchange(
        port: served.port,
        request: "GET /metrics HTTP/1.1\r\nX: \(String(repeating: "a", count: 9000))\r\n\r\n"))
    #expect(huge.status == 431)
    // A query string is not part of the path; HEAD gets the headers only.
    let query = try #require(httpGet(port: served.port, "/metrics?x=1"))
    #expect(query.status == 200)
    let head = try #require(
      httpExchange(port: served.port, request: "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
    #expect(head.status == 200 && head.body.isEmpty)
    #expect(Int(head.headers["content-length"] ?? "") ?? 0 > 0)
    #expect(served.endpoint.scrapesServed == 2)
  }

  @Test func aRequestArrivingInPiecesIsAnsweredOnceWhole() throws {
    let served = try Served()
    defer { served.stop() }
    let response = try #require(
      httpExchange(
        port: served.port, request: "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        split: [3, 17, 30, 41]))
    #expect(response.status == 200)
    #expect(response.body.contains("runloop_iterations_total"))
    #expect(served.endpoint.scrapesServed == 1)
  }

  @Test(arguments: [
    ("127.0.0.1:9464", SocketEndpoint.tcp(host: "127.0.0.1", port: 9464)),
    ("[::1]:0", .tcp(host: "::1", port: 0)),
    (":9100", .tcp(host: "127.0.0.1", port: 9100)),
  ])
  func addressesAreReadAsHostAndPort(text: String, expected: SocketEndpoint) throws {
    #expect(try PrometheusEndpoint.address(text) == expected)
  }

  @Test(arguments: [
    ("localhost:9464", "is not a numeric IPv4 address"),
    ("127.0.0.1", "has no port"),
    ("127.0.0.1:70000", "is not a port number"),
    ("127.0.0.1:x", "is not a port number"),
    ("::1:9464", "put an IPv6 address in brackets"),
    ("[::1]9464", "is not [IPv6 address]:port"),
    ("[zz]:1", "is not a numeric IPv6 address"),
  ])
  func badAddressesSayWhatIsWrong(text: String, message: String) {
    #expect {
      try PrometheusEndpoint.address(text)
    } throws: { error in
      let error = error as? RunLoopError
      return error?.code == .invalidArgument && error?.message.contains(message) == true
    }
  }

  @Test func aTakenAddressIsASystemCallError() throws {
    let served = try Served()
    defer { served.stop() }
    #expect {
      try PrometheusEndpoint(
        listeningOn: .tcp(host: "127.0.0.1", port: served.port), registry: served.registry)
    } throws: { error in
      (error as? RunLoopError)?.code == .systemCallFailed
    }
  }
}
