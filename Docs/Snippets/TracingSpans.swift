import InMemoryTracing
import RunLoopCore
import RunLoopSpans
import Tracing

// The spans block of TracingARunLoop.md ("Spans in a tracing backend").

package func tracingSpansExample(worker: EventRunLoop) throws {
  // snippet: tracing-spans
  let tracer = InMemoryTracer()  // in a service: your backend's tracer (swift-otel's)
  InstrumentationSystem.bootstrap(tracer)
  worker.addInstrument(LoopSpans())

  let request = tracer.startSpan("GET /jobs", context: .topLevel)
  try ServiceContext.withValue(request.context) {
    try worker.performAndWait(name: "count jobs") { print("jobs: 3") }
  }
  request.end()
  for span in tracer.finishedSpans {
    print(span.operationName, span.spanID, "parent:", span.parentSpanID ?? "none")
  }
  // end snippet
}
