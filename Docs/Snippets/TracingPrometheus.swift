import Prometheus
import RunLoopCore
import RunLoopObservers
import RunLoopPrometheus

// The Prometheus block of TracingARunLoop.md.

package func tracingPrometheusExample() throws {
  // snippet: tracing-prometheus
  let registry = PrometheusCollectorRegistry()
  let metrics = LoopMetrics(exportingTo: PrometheusEndpoint.metricsFactory(registry: registry))
  metrics.attachToAllLoops()
  let endpoint = try PrometheusEndpoint(
    listeningOn: PrometheusEndpoint.address("127.0.0.1:9464"), registry: registry)
  try endpoint.add(to: .main, mode: .common)
  // end snippet
  _ = endpoint
}
