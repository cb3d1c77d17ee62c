import Logging
import RunLoopCore
import RunLoopTracing

extension Logger.MetadataProvider {
  /// A metadata provider that adds the calling thread's run-loop context
  /// (``RunLoopTracing/LoopContext/metadata``) to every log line, with any handler: the
  /// tracer's run id, the loop, its mode, pass and depth, and the call-out it is in. Inside a
  /// traced call-out it adds the call-out's `runloop_span` and `runloop_trace` (the ids of
  /// the JSON log's `span` and `trace`, and of the tracing backend with `RunLoopSpans` on),
  /// whether or not a `LoopTracer` is attached. On a thread outside a traced run it adds
  /// nothing.
  ///
  /// Making the provider turns ``/RunLoopTracing/LoopContext/isPublished`` on, so that
  /// tracers start keeping the context.
  ///
  /// ```swift
  /// LoggingSystem.bootstrap(
  ///   { label, provider in StreamLogHandler.standardError(label: label, metadataProvider: provider) },
  ///   metadataProvider: .runLoop())
  /// ```
  public static func runLoop() -> Logger.MetadataProvider {
    LoopContext.isPublished = true
    return Logger.MetadataProvider {
      var metadata = LoopContext.current?.metadata ?? [:]
      let span = EventRunLoop.currentCalloutSpan
      guard span != 0 else { return metadata }
      metadata["runloop_span"] = .string(span.spanHex)
      if let trace = EventRunLoop.currentTraceID {
        metadata["runloop_trace"] = .string(trace.high.spanHex + trace.low.spanHex)
      }
      return metadata
    }
  }
}
