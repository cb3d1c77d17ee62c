import InMemoryTracing
import Synchronization
import Tracing

/// swift-distributed-tracing's `InMemoryTracer`, its ids in W3C sizes (32 and 16 hex
/// digits, from a counter that starts at `seed`, so that two processes do not share ids),
/// propagating its context as a W3C `traceparent`, as a production tracer (swift-otel) does:
/// what the spans' tests bootstrap, so that the loop takes the spans' ids as its own and a
/// named-port frame carries them to another process.
public struct W3CTestTracer: Tracer {
  /// The recorder's spans.
  public typealias Span = InMemorySpan

  /// The recording tracer: finished spans, with their ids and parents.
  public let recorder: InMemoryTracer

  /// A tracer whose ids count up from `seed` (which must be below 2^48).
  public init(seed: UInt64) {
    let counter = Atomic<UInt64>(seed << 16)
    @Sendable func hex(_ value: UInt64) -> String {
      let digits = String(value, radix: 16)
      return String(repeating: "0", count: 16 - digits.count) + digits
    }
    recorder = InMemoryTracer(
      idGenerator: .init(
        nextTraceID: { hex(0x7ace) + hex(counter.wrappingAdd(1, ordering: .relaxed).newValue) },
        nextSpanID: { hex(counter.wrappingAdd(1, ordering: .relaxed).newValue) }))
  }

  /// Starts a span in the recorder.
  public func startSpan<Instant: TracerInstant>(
    _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
    at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
  ) -> InMemorySpan {
    recorder.startSpan(
      operationName, context: context(), ofKind: kind, at: instant(), function: function,
      file: fileID, line: line)
  }

  /// Flushes the recorder.
  public func forceFlush() { recorder.forceFlush() }

  /// Writes the context's span as a `traceparent`.
  public func inject<Carrier, Inject: Injector>(
    _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
  ) where Inject.Carrier == Carrier {
    guard let span = context.inMemorySpanContext else { return }
    injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
  }

  /// Reads a `traceparent` into the context, as the remote parent of the next span.
  public func extract<Carrier, Extract: Extractor>(
    _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
  ) where Extract.Carrier == Carrier {
    guard let header = extractor.extract(key: "traceparent", from: carrier) else { return }
    let parts = header.split(separator: "-")
    guard parts.count == 4 else { return }
    context.inMemorySpanContext = InMemorySpanContext(
      traceID: String(parts[1]), spanID: String(parts[2]), parentSpanID: nil)
  }
}
