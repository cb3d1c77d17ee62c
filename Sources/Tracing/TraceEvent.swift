import Glibc
import RunLoopCore
import RunLoopObservers

/// What a ``LoopTracer`` hands a sink of this package on the loop thread: a fixed-size value
/// with no references (copying it into a queue is a plain memory copy, with no reference
/// counting), whose strings are small integer ids into the tracer's ``TraceStrings``. The
/// sink's writer thread turns it into a ``TraceRecord`` (``TraceStrings/record(for:)``).
///
/// It is not the `TraceRecord` itself because building one (a dozen fields, half of them
/// strings) would be most of the tracer's cost on the loop thread (runloop-bench, tracing
/// overhead).
package struct TraceEvent: Sendable {
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
  /// The call-out's span (0 for other records) and cause.
  package var span: UInt64
  package var cause: CalloutCause?
  /// The call-out's trace id (``CalloutRecord/traceID``), both words 0 when it has none.
  package var traceHigh: UInt64
  package var traceLow: UInt64
  package var iteration: UInt64
  package var depth: Int
  package var tid: Int32
  /// The step of the guide's sequence of events (``LoopPassInfo/step``, 1 to 10) of an
  /// activity, call-out or sleep; 0 when the record has none.
  package var step: UInt8
  /// A ``LoopActivity`` raw value, for an activity.
  package var activity: UInt32
  /// String ids in the tracer's table.
  package var thread: UInt32
  package var mode: UInt32
  package var calloutKind: UInt32
  package var calloutName: UInt32
  /// Which tracer's table the ids belong to, as numbered by the sink
  /// (``TraceEventSink/_register(_:)``).
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
    self.span = 0
    self.cause = nil
    self.traceHigh = 0
    self.traceLow = 0
    self.iteration = iteration
    self.depth = depth
    self.tid = tid
    self.step = 0
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
    TraceClock.subtracting(timestamp, dueAt)
  }
}

/// One element of a sink's queue: a compact event from a tracer, a whole record handed to the
/// sink's public `enqueue(_:)` (by a tool, a test, or a tracer whose string table is full),
/// or the end of a tracer's events. Boxed, so that the common case stays a small copy.
package enum TraceItem: Sendable {
  case event(TraceEvent)
  indirect case record(TraceRecord)
  /// The tracer that numbers its events `source` sends no more: every event of it is before
  /// this item, so the writer releases the tracer's table when it gets here
  /// (``TraceSources/release(_:)``). Queued with `WriterThread.enqueueControl(_:)`.
  case release(UInt32)
  /// The JSON sink closes its file and opens its path again (after a rotation renamed it):
  /// everything queued before this item goes to the old file, everything after to the new
  /// one. Queued with `WriterThread.enqueueControl(_:)`; other sinks ignore it.
  case reopen
}

/// A sink that takes ``TraceEvent`` values from the tracer instead of whole records: the
/// sinks of this package. Other ``TraceSink`` implementations get whole records.
package protocol TraceEventSink: TraceSink {
  /// Makes the sink able to resolve the ids of `strings`; returns the number events that use
  /// them carry in ``TraceEvent/source``. Called once per tracer, when it is created.
  func _register(_ strings: TraceStrings) -> UInt32
  /// Takes one event; called on the loop thread, must not block.
  func _enqueue(_ event: TraceEvent)
  /// The tracer registered as `source` sends no more events (it is closed or gone): the sink
  /// releases its table once every event queued before this call is written, so that a sink
  /// fed by many short-lived tracers keeps only the tables of those alive. Must not block;
  /// called once per ``_register(_:)``.
  func _release(_ source: UInt32)
  /// The tables registered and not released yet (for tests and diagnostics).
  var _registeredTables: Int { get }
}

/// The string tables of the tracers that feed one sink, by ``TraceEvent/source``; the
/// sink's writer thread resolves events through it.
///
/// A released table's number goes on a free list and is handed to the next tracer that
/// registers: the writer releases a table only when it reaches the tracer's
/// ``TraceItem/release(_:)`` item, after every event of that tracer, and a tracer registered
/// later queues its events after that item. So the number of tables is that of the live
/// tracers (plus those whose events are still queued), however many come and go.
package final class TraceSources: Sendable {
  private struct Slots {
    // By source number; `nil` for a free number.
    var tables: [TraceStrings?] = []
    // How many registrations each table has (a tracer that names a sink twice registers
    // twice and releases twice).
    var references: [Int] = []
    var numbers: [ObjectIdentifier: UInt32] = [:]
    var free: [UInt32] = []
  }

  private let slots = GuardedState(Slots())

  package init() {}

  /// The number events that use `strings` carry; a table registered again keeps its number.
  package func register(_ strings: TraceStrings) -> UInt32 {
    slots.withLock { slots in
      if let source = slots.numbers[ObjectIdentifier(strings)] {
        slots.references[Int(source)] += 1
        return source
      }
      let source: UInt32
      if let reused = slots.free.popLast() {
        source = reused
        slots.tables[Int(source)] = strings
        slots.references[Int(source)] = 1
      } else {
        source = UInt32(slots.tables.count)
        slots.tables.append(strings)
        slots.references.append(1)
      }
      slots.numbers[ObjectIdentifier(strings)] = source
      return source
    }
  }

  /// The table of `source`, or `nil` when no table has that number.
  package func table(_ source: UInt32) -> TraceStrings? {
    slots.withLock { slots in
      Int(source) < slots.tables.count ? slots.tables[Int(source)] : nil
    }
  }

  /// Drops one registration of `source`; the last one frees the number for reuse (on the
  /// writer thread, once every event of the table is written). Releasing a free number does
  /// nothing.
  package func release(_ source: UInt32) {
    let table = slots.withLock { slots -> TraceStrings? in
      let index = Int(source)
      guard index < slots.tables.count, let table = slots.tables[index] else { return nil }
      slots.references[index] -= 1
      guard slots.references[index] == 0 else { return nil }
      slots.tables[index] = nil
      slots.numbers[ObjectIdentifier(table)] = nil
      slots.free.append(source)
      return table
    }
    // The last reference to the table, when its tracer is gone: freed here, after the lock.
    withExtendedLifetime(table) {}
  }

  /// The tables registered and not released.
  package var count: Int {
    slots.withLock { $0.numbers.count }
  }

  /// The records of `batch`, in order (on the writer thread); a release item releases its
  /// table once the events before it are resolved.
  package func records<Batch: Sequence<TraceItem>>(_ batch: Batch) -> [TraceRecord] {
    var resolver = Resolver(sources: self)
    var records: [TraceRecord] = []
    records.reserveCapacity(batch.underestimatedCount)
    for item in batch {
      switch item {
      case .event(let event):
        if let record = resolver.record(for: event) { records.append(record) }
      case .record(let record): records.append(record)
      case .release(let source): resolver.release(source)
      case .reopen: break
      }
    }
    return records
  }

  /// Resolves the events of one batch, taking each table's strings once.
  package struct Resolver {
    let sources: TraceSources
    private var snapshots: [UInt32: TraceStrings.Snapshot] = [:]
    private var lastSource: UInt32 = .max
    private var last: TraceStrings.Snapshot?

    package init(sources: TraceSources) {
      self.sources = sources
    }

    /// The strings of `source`; `nil` when no table has that number, which the ordering of
    /// releases rules out (the event is then left out rather than resolved against nothing).
    package mutating func snapshot(_ source: UInt32) -> TraceStrings.Snapshot? {
      if source == lastSource, let last { return last }
      let snapshot: TraceStrings.Snapshot
      if let known = snapshots[source] {
        snapshot = known
      } else {
        guard let table = sources.table(source) else { return nil }
        snapshot = table.snapshot()
        snapshots[source] = snapshot
      }
      lastSource = source
      last = snapshot
      return snapshot
    }

    package mutating func record(for event: TraceEvent) -> TraceRecord? {
      snapshot(event.source)?.record(for: event)
    }

    /// Forgets the strings of `source` and releases its table: a later event with that
    /// number belongs to the tracer that gets the number next.
    package mutating func release(_ source: UInt32) {
      snapshots[source] = nil
      if lastSource == source {
        lastSource = .max
        last = nil
      }
      sources.release(source)
    }
  }
}
