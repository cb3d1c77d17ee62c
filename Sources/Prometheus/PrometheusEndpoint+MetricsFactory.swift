import CoreMetrics
import Prometheus

extension PrometheusEndpoint {
  /// A swift-metrics factory that records into `registry` under Prometheus's naming rules,
  /// for ``/RunLoopObservers/LoopMetrics``: `runloop.callout.delay` becomes the histogram
  /// `runloop_callout_delay_seconds` (with labels `loop` and `kind`), `runloop.iterations`
  /// the counter `runloop_iterations_total`, `runloop.utilization` the gauge
  /// `runloop_utilization`. Durations get buckets from 10 µs to 2.5 s, a loop's scale.
  ///
  /// ```swift
  /// let metrics = LoopMetrics(exportingTo: PrometheusEndpoint.metricsFactory(registry: registry))
  /// ```
  public static func metricsFactory(registry: PrometheusCollectorRegistry) -> any MetricsFactory {
    LoopMetricsNaming(registry: registry)
  }
}
