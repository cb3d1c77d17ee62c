import Logging
import OTel
import RunLoopCore
import RunLoopSpans
import ServiceLifecycle
import Tracing

/// swift-otel's tracer, bootstrapped as the process's instrument and exporting to `endpoint`
/// over OTLP/HTTP with protobuf, and the loop spans attached to every loop of the process.
struct Exporter {
  let group: ServiceGroup
  let running: Task<Void, any Error>

  init(endpoint: String, service: String) throws {
    // snippet: otlp-bootstrap
    var configuration = OTel.Configuration.default
    configuration.serviceName = service  // "runloop-demo"
    configuration.traces.exporter = .otlp
    configuration.traces.otlpExporter.protocol = .httpProtobuf
    configuration.traces.otlpExporter.endpoint = endpoint  // "http://127.0.0.1:4318/v1/traces"
    configuration.metrics.enabled = false
    configuration.logs.enabled = false
    let backend = try OTel.makeTracingBackend(configuration: configuration)
    InstrumentationSystem.bootstrap(backend.factory)
    EventRunLoop.addProcessInstrument(LoopSpans())
    let group = ServiceGroup(services: [backend.service], logger: Logger(label: "otel"))
    let running = Task { try await group.run() }
    // end snippet
    self.group = group
    self.running = running
  }

  /// Exports the spans still buffered and stops the exporter.
  func shutDown() async throws {
    // snippet: otlp-shutdown
    await group.triggerGracefulShutdown()  // exports what is still buffered
    try await running.value
    // end snippet
  }
}

/// A loop thread that runs until it is stopped (``RunLoopThread/stop()``).
func startLoopThread(_ name: String) throws -> RunLoopThread {
  let thread = RunLoopThread(name: name) { try $0.runLoop.runUntilStopped() }
  try thread.start()
  return thread
}

/// Stops the thread's loop after the work already queued, and joins it.
func stopLoopThread(_ thread: RunLoopThread) {
  thread.stop()
  try? thread.join()
}
