import Logging
import RunLoopTracing

extension Logger.MetadataProvider {
  /// A metadata provider that adds the calling thread's run-loop context
  /// (``RunLoopTracing/LoopContext/metadata``) to every log line, with any handler: the
  /// tracer's run id, the loop, its mode, pass and depth, and the call-out it is in. On a
  /// thread outside a traced run it adds nothing.
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
      LoopContext.current?.metadata ?? [:]
    }
  }
}
