import CoreMetrics
import Prometheus
import RunLoopCore
import RunLoopObservers
import RunLoopPorts
import RunLoopPrometheus

/// The `run` command's Prometheus endpoint (`--metrics-address`): the loop metrics
/// (utilization, call-out delays by kind, perform queue depths...) through swift-metrics
/// into a registry, plus what the service counts elsewhere, brought up to date at each
/// scrape: the stall watchdog's stalls and the trace sinks' drops.
final class MetricsServer: Sendable {
  /// The numbers kept outside the registry, read at each scrape on the main loop.
  struct Totals: Sendable {
    var stalls: UInt64 = 0
    var journalDrops: UInt64 = 0
    var jsonRecordsLost: UInt64 = 0
    var jsonRecordsPending: UInt64 = 0
  }

  let registry = PrometheusCollectorRegistry()
  let endpoint: PrometheusEndpoint
  private let stalls: Prometheus.Counter
  private let journalDrops: Prometheus.Counter
  private let jsonLost: Prometheus.Counter
  private let jsonPending: Prometheus.Gauge
  // Guarded by its own lock: where the totals come from, and the totals at the last scrape.
  private let sources = GuardedState<(read: (@Sendable () -> Totals)?, last: Totals)>(
    (nil, Totals()))

  /// Listens on `address` (nothing is served until ``start(on:)``).
  init(address: SocketEndpoint) throws(RunLoopError) {
    let registry = self.registry
    stalls = registry.makeCounter(
      descriptor: Self.name("stalls", unit: "total", help: "Stalls the stall watchdog reported"))
    let drops = Self.name("trace_drops", unit: "total", help: "Trace records a sink lost")
    journalDrops = registry.makeCounter(descriptor: drops, labels: [("sink", "journald")])
    jsonLost = registry.makeCounter(descriptor: drops, labels: [("sink", "json")])
    jsonPending = registry.makeGauge(
      descriptor: Self.name(
        "json_log_pending", unit: "records", help: "Records queued for the JSON log"))
    let box = ServerBox()
    endpoint = try PrometheusEndpoint(listeningOn: address, registry: registry) {
      box.server?.refresh()
    }
    box.server = self
  }

  private static func name(_ metric: String, unit: String, help: String) -> MetricNameDescriptor {
    MetricNameDescriptor(namespace: "runloop", metricName: metric, unitName: unit, helpText: help)
  }

  /// The factory ``LoopMetrics`` exports through.
  var factory: any MetricsFactory { PrometheusEndpoint.metricsFactory(registry: registry) }

  /// Serves on `loop`, reading the outside totals from `totals` at each scrape.
  func start(on loop: EventRunLoop, totals: @escaping @Sendable () -> Totals) throws(RunLoopError) {
    sources.withLock { $0.read = totals }
    try endpoint.add(to: loop, mode: .common)
  }

  private func refresh() {
    guard let read = sources.withLock({ $0.read }) else { return }
    let now = read()
    let last = sources.withLock { state -> Totals in
      defer { state.last = now }
      return state.last
    }
    stalls.increment(by: Int64(clamping: now.stalls &- last.stalls))
    journalDrops.increment(by: Int64(clamping: now.journalDrops &- last.journalDrops))
    jsonLost.increment(by: Int64(clamping: now.jsonRecordsLost &- last.jsonRecordsLost))
    jsonPending.set(to: Double(now.jsonRecordsPending))
  }
}

/// The server, reached by the endpoint's scrape hook; weak, so that neither keeps the other.
private final class ServerBox: @unchecked Sendable {
  // Unchecked: set once in the server's init, before the endpoint is on a loop.
  weak var server: MetricsServer?
}
