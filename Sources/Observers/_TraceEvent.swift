import Glibc
import RunLoopCore

/// What a ``LoopTracer`` hands a sink of this package on the loop thread: a fixed-size value
/// with no references (copying it into a queue is a plain memory copy, with no reference
/// counting), whose strings are small integer ids into the tracer's ``_TraceStrings``. The
/// sink's writer thread turns it into a ``TraceRecord`` (``_TraceStrings/record(for:)``).
///
/// Building the `TraceRecord` itself on the loop thread (a dozen fields, half of them
/// strings) was most of the tracer's cost there (runloop-bench, tracing overhead).
package struct _TraceEvent: Sendable {
  /// An id that names no string (a field the record does not have).
  package static let none: UInt32 = .max

  package var seq: UInt64
  package var timestamp: Int64
  package var wallTime: Int64
  /// The call-out's or sleep's length; unused for an activity.
  package var duration: Int64
  /// The call-out's due time, when `hasDue`.
  package var dueAt: Int64
  package var loop: UInt64
  package var iteration: UInt64
  package var depth: Int
  package var tid: Int32
  /// A ``LoopActivity`` raw value, for an activity.
  package var activity: UInt32
  /// String ids in the tracer's table.
  package var thread: UInt32
  package var mode: UInt32
  package var calloutKind: UInt32
  package var calloutName: UInt32
  /// Which tracer's table the ids belong to, as numbered by the sink
  /// (``_TraceEventSink/_register(_:)``).
  package var source: UInt32
  package var kind: TraceRecord.Kind
  package var hasDue: Bool

  package init(
    kind: TraceRecord.Kind, seq: UInt64, timestamp: Int64, wallTime: Int64, loop: UInt64,
    iteration: UInt64, depth: Int, tid: Int32, thread: UInt32, mode: UInt32
  ) {
    self.kind = kind
    self.seq = seq
    self.timestamp = timestamp
    self.wallTime = wallTime
    self.duration = 0
    self.dueAt = 0
    self.hasDue = false
    self.loop = loop
    self.iteration = iteration
    self.depth = depth
    self.tid = tid
    self.activity = 0
    self.thread = thread
    self.mode = mode
    self.calloutKind = Self.none
    self.calloutName = Self.none
    self.source = 0
  }

  /// The call-out's lateness (start minus due time, clamped to `Int64`'s range), when
  /// `hasDue`; the records and the JSON encoder both take it from here.
  package var lateness: Int64 {
    _TraceClock.subtracting(timestamp, dueAt)
  }
}

/// One element of a sink's queue: a compact event from a tracer, or a whole record handed to
/// the sink's public `enqueue(_:)` (by a tool, a test, or a tracer whose string table is
/// full). Boxed, so that the common case stays a small copy.
package enum _TraceItem: Sendable {
  case event(_TraceEvent)
  indirect case record(TraceRecord)
}

/// A sink that takes ``_TraceEvent`` values from the tracer instead of whole records: the
/// sinks of this package. Other ``TraceSink`` implementations get records, as before.
package protocol _TraceEventSink: TraceSink {
  /// Makes the sink able to resolve the ids of `strings`; returns the number events that use
  /// them carry in ``_TraceEvent/source``. Called once per tracer, when it is created.
  func _register(_ strings: _TraceStrings) -> UInt32
  /// Takes one event; called on the loop thread, must not block.
  func _enqueue(_ event: _TraceEvent)
}

/// The string tables of the tracers that feed one sink, by ``_TraceEvent/source``; the
/// sink's writer thread resolves events through it.
package final class _TraceSources: Sendable {
  private let registered = GuardedState<[_TraceStrings]>([])

  package init() {}

  /// The tables registered so far, by source number.
  package func tables() -> [_TraceStrings] {
    registered.withLock { $0 }
  }

  package func register(_ strings: _TraceStrings) -> UInt32 {
    registered.withLock { tables in
      if let index = tables.firstIndex(where: { $0 === strings }) { return UInt32(index) }
      tables.append(strings)
      return UInt32(tables.count - 1)
    }
  }

  /// The records of `batch`, in order (on the writer thread).
  package func records<Batch: Sequence<_TraceItem>>(_ batch: Batch) -> [TraceRecord] {
    var resolver = Resolver(sources: self)
    var records: [TraceRecord] = []
    records.reserveCapacity(batch.underestimatedCount)
    for item in batch {
      switch item {
      case .event(let event): records.append(resolver.record(for: event))
      case .record(let record): records.append(record)
      }
    }
    return records
  }

  /// Resolves the events of one batch, taking each table's strings once.
  package struct Resolver {
    let sources: _TraceSources
    private var tables: [_TraceStrings] = []
    private var snapshots: [Int: _TraceStrings.Snapshot] = [:]
    private var lastSource: UInt32 = .max
    private var last: _TraceStrings.Snapshot?

    package init(sources: _TraceSources) {
      self.sources = sources
    }

    package mutating func snapshot(_ source: UInt32) -> _TraceStrings.Snapshot {
      if source == lastSource, let last { return last }
      let index = Int(source)
      let snapshot: _TraceStrings.Snapshot
      if let known = snapshots[index] {
        snapshot = known
      } else {
        if index >= tables.count { tables = sources.tables() }
        snapshot = tables[index].snapshot()
        snapshots[index] = snapshot
      }
      lastSource = source
      last = snapshot
      return snapshot
    }

    package mutating func record(for event: _TraceEvent) -> TraceRecord {
      snapshot(event.source).record(for: event)
    }
  }
}
