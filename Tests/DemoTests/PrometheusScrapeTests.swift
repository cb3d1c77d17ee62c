import Foundation
import Glibc
import RunLoopTestSupport
import Testing

/// A real Prometheus (Debian's `prometheus`, installed by scripts/ensure-deps.sh) scraping a
/// running `runloop-demo run --metrics-address`, read back through its HTTP query API.
@Suite("runloop-demo run --metrics-address")
struct PrometheusScrapeTests {
  static let prometheus = "/usr/bin/prometheus"

  @Test func aRealPrometheusScrapesTheLoopMetricsOfEveryLoop() throws {
    try #require(
      FileManager.default.isExecutableFile(atPath: Self.prometheus),
      "prometheus is not installed (scripts/ensure-deps.sh installs Debian's package)")
    let directory = try scratchDirectory("prometheus")
    let demo = try DemoProcess(
      ["run", "--no-journal", "--workers", "2", "--metrics-address", "127.0.0.1:0"],
      directory: directory)
    defer {
      demo.send(SIGTERM)
      _ = demo.wait()
    }
    #expect(demo.waitForOutput("/metrics\n"))
    let metricsPort = try #require(Self.port(in: demo.stdout, after: "metrics: http://127.0.0.1:"))
    let server = try PrometheusServer(scraping: metricsPort, in: directory)
    defer { server.stop() }

    // Three loops (main and two workers), each with its utilization, once Prometheus has
    // scraped at least once after every loop slept.
    var utilization: [String] = []
    let found = eventually(60) {
      utilization = server.query("runloop_utilization").compactMap { $0["loop"] }
      return Set(utilization).count == 3
    }
    #expect(found, "series: \(utilization); prometheus: \(server.log)")
    #expect(Set(utilization) == ["1", "2", "3"])
    // The delays of the main loop's timer call-outs (the heartbeat every 500 ms) as a
    // histogram by kind; the workers' custom-source signals likewise.
    #expect(
      eventually(30) {
        !server.query(#"runloop_callout_delay_seconds_count{kind="timer",loop="1"} > 0"#).isEmpty
      })
    #expect(
      eventually(30) {
        !server.query(#"runloop_callout_delay_seconds_count{kind="source",loop="2"} > 0"#).isEmpty
      })
    // The service's own totals: stalls and the sinks' drops, and queue depths per loop.
    #expect(server.query("runloop_stalls_total").count == 1)
    #expect(
      Set(server.query("runloop_trace_drops_total").compactMap { $0["sink"] }) == [
        "journald", "json",
      ])
    #expect(Set(server.query("runloop_perform_queue_depth").compactMap { $0["loop"] }).count == 3)
    // The scrape target is up and Prometheus saw it as our job.
    #expect(server.query(#"up{job="runloop-demo"} == 1"#).count == 1)
  }

  @Test func aBadMetricsAddressIsAUsageError() throws {
    let result = try runDemo(["run", "--no-journal", "--metrics-address", "localhost:9464"])
    #expect(result.exitedNormally && result.status == 64)
    #expect(
      result.stderr.contains(
        "--metrics-address: 'localhost' in 'localhost:9464' is not a numeric IPv4 address"))
  }

  @Test func aTakenMetricsAddressExitsUnavailableBeforeWritingAnything() throws {
    let directory = try scratchDirectory("metrics-taken")
    let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(holder) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(holder, $0, length) == 0 && listen(holder, 1) == 0
          && getsockname(holder, $0, &length) == 0
      }
    }
    try #require(bound)
    let port = UInt16(bigEndian: address.sin_port)
    let result = try runDemo(
      ["run", "--no-journal", "--metrics-address", "127.0.0.1:\(port)"], directory: directory)
    #expect(result.exitedNormally && result.status == 69)
    #expect(result.stderr.contains("cannot serve metrics at tcp 127.0.0.1:\(port)"))
    #expect(result.stderr.contains("Address already in use"))
    #expect(!FileManager.default.fileExists(atPath: directory + "/runloop-trace.jsonl"))
  }

  static func port(in text: String, after prefix: String) -> UInt16? {
    guard let range = text.range(of: prefix) else { return nil }
    return UInt16(text[range.upperBound...].prefix { $0.isNumber })
  }
}

/// `prometheus` on loopback with a one-second scrape interval and its storage in a
/// temporary directory, scraping one target.
final class PrometheusServer: @unchecked Sendable {
  let process = Process()
  let port: UInt16
  private let logPath: String

  init(scraping target: UInt16, in directory: String) throws {
    port = try Self.freePort()
    let config = directory + "/prometheus.yml"
    try """
    global:
      scrape_interval: 1s
      evaluation_interval: 1s
    scrape_configs:
      - job_name: runloop-demo
        static_configs:
          - targets: ["127.0.0.1:\(target)"]
    """.write(toFile: config, atomically: true, encoding: .utf8)
    logPath = directory + "/prometheus.log"
    _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    process.executableURL = URL(fileURLWithPath: PrometheusScrapeTests.prometheus)
    process.arguments = [
      "--config.file=\(config)", "--storage.tsdb.path=\(directory)/tsdb",
      "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
    ]
    let log = FileHandle(forWritingAtPath: logPath)
    process.standardOutput = log
    process.standardError = log
    process.standardInput = FileHandle.nullDevice
    try process.run()
  }

  var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

  /// The label sets of the instant query's series (`[]` while Prometheus is starting).
  /// An empty answer comes after a pause of 100 ms, so that a test polling for series does
  /// not flood Prometheus with queries.
  func query(_ promql: String) -> [[String: String]] {
    let series = seriesOf(promql)
    if series.isEmpty { usleep(100_000) }
    return series
  }

  private func seriesOf(_ promql: String) -> [[String: String]] {
    var components = URLComponents(string: "http://127.0.0.1:\(port)/api/v1/query")!
    components.queryItems = [URLQueryItem(name: "query", value: promql)]
    guard let path = components.percentEncodedQuery,
      let body = httpGetBody(port: port, path: "/api/v1/query?" + path),
      let json = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
      json["status"] as? String == "success",
      let data = json["data"] as? [String: Any],
      let result = data["result"] as? [[String: Any]]
    else { return [] }
    return result.compactMap { $0["metric"] as? [String: String] }
  }

  func stop() {
    process.terminate()
    process.waitUntilExit()
  }

  private static func freePort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    try #require(ok, "no free port on 127.0.0.1")
    return UInt16(bigEndian: address.sin_port)
  }
}
