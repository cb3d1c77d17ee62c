import RunLoopCore
import RunLoopTracing

/// A trace sink that keeps the records it gets.
package final class CollectingSink: TraceSink, @unchecked Sendable {
  private let records = GuardedState<[TraceRecord]>([])
  package init() {}
  package func enqueue(_ record: TraceRecord) { records.withLock { $0.append(record) } }
  package func close() {}
  package var all: [TraceRecord] { records.withLock { $0 } }
}
