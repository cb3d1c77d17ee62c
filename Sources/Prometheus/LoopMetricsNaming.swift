import CoreMetrics
import Prometheus

/// Turns the `runloop.*` labels of ``/RunLoopObservers/LoopMetrics`` into Prometheus names
/// (`runloop_callout_delay_seconds`, `runloop_iterations_total`) and gives the loop's
/// durations buckets of a loop's scale: a call-out's delay is microseconds to a second, where
/// swift-prometheus's default buckets start at 5 ms and would put every sample in the first.
struct LoopMetricsNaming: MetricsFactory {
  let base: PrometheusMetricsFactory

  init(registry: PrometheusCollectorRegistry) {
    var factory = PrometheusMetricsFactory(registry: registry)
    factory.defaultDurationHistogramBuckets = Self.loopBuckets
    factory.defaultValueHistogramBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    base = factory
  }

  /// 10 µs to 2.5 s, about three buckets a decade.
  static let loopBuckets: [Duration] = [
    .microseconds(10), .microseconds(25), .microseconds(50), .microseconds(100),
    .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
    .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
    .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
    .milliseconds(2500),
  ]

  static func name(_ label: String, suffix: String = "") -> String {
    let base = String(label.map { $0 == "." || $0 == "-" ? "_" : $0 })
    return base.hasSuffix(suffix) ? base : base + suffix
  }

  func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
    base.makeCounter(label: Self.name(label, suffix: "_total"), dimensions: dimensions)
  }

  func makeFloatingPointCounter(label: String, dimensions: [(String, String)])
    -> any FloatingPointCounterHandler
  {
    base.makeFloatingPointCounter(label: Self.name(label, suffix: "_total"), dimensions: dimensions)
  }

  func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool)
    -> any RecorderHandler
  {
    base.makeRecorder(label: Self.name(label), dimensions: dimensions, aggregate: aggregate)
  }

  func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
    base.makeMeter(label: Self.name(label), dimensions: dimensions)
  }

  func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
    base.makeTimer(label: Self.name(label, suffix: "_seconds"), dimensions: dimensions)
  }

  func destroyCounter(_ handler: any CounterHandler) { base.destroyCounter(handler) }

  func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
    base.destroyFloatingPointCounter(handler)
  }

  func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }

  func destroyMeter(_ handler: any MeterHandler) { base.destroyMeter(handler) }

  func destroyTimer(_ handler: any TimerHandler) { base.destroyTimer(handler) }
}
