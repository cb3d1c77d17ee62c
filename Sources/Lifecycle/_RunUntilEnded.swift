import ServiceLifecycle

/// The `run()` of a service made of threads: waits with `wait` until they have ended;
/// a graceful shutdown or the task's cancellation calls `stop` first.
func runUntilEnded(
  stop: @escaping @Sendable () -> Void, wait: () async throws -> Void
) async throws {
  try await withTaskCancellationHandler {
    try await withGracefulShutdownHandler {
      try await wait()
    } onGracefulShutdown: {
      stop()
    }
  } onCancel: {
    stop()
  }
}
