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

/// A loop thread that runs until it is stopped.
func startLoopThread(_ name: String) throws -> RunLoopThread {
  let thread = RunLoopThread(name: name) { thread in
    try thread.runLoop.add(CustomInputSource {}, mode: .default)
    while !thread.isCancelled { _ = try thread.runLoop.run(mode: .default, timeout: .seconds(1)) }
  }
  try thread.start()
  return thread
}

func stopLoopThread(_ thread: RunLoopThread) {
  thread.cancel()
  let loop = thread.runLoop
  loop.perform { loop.stop() }
  try? thread.join()
}
