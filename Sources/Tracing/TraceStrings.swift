import Glibc
import RunLoopCore
import RunLoopObservers

/// A tracer's strings (thread names, modes, call-out kinds and names), each stored once and
/// named by a small integer id that ``TraceEvent`` values carry; plus the tracer's record
/// numbering and its thread-name cache, under the same lock, so that the loop thread takes
/// one short lock per event.
///
/// Ids are never reused, so an event queued before its thread exited still resolves to the
/// name it was recorded with. The table holds at most ``capacity`` strings: a tracer whose
/// call-out names are all different (a name made per request, say) would otherwise grow it
/// for ever. Past that, the tracer sends whole records for new strings (the slow path it had
/// before events), so nothing is lost and the memory stays bounded.
package final class TraceStrings: Sendable {
  /// The most strings a table holds.
  package static let capacity = 4096

  package let runID: String
  package let processID: Int32
  private let state: GuardedState<Table>

  struct Table {
    var strings: [String] = []
    // By bytes, not by `==` (canonical equivalence): "é" and "e" + U+0301 are equal strings,
    // and the trace must carry each name exactly as it was given.
    var ids: [ExactString: UInt32] = [:]
    var seq: UInt64 = 0
    // Thread-name ids by tid (read once per thread, forgotten when the thread's loop exits);
    // the last thread looked up first, since a loop asks for its own thread every time.
    var threadNames: [pid_t: UInt32] = [:]
    var lastThread: (tid: pid_t, id: UInt32) = (0, TraceEvent.none)
    // The names of threads first seen once the table was full: their events go as whole
    // records, whose thread name is read once too (not from `/proc` at every record, which
    // also let a renamed thread change name in the middle of its trace).
    var unlistedThreadNames: [pid_t: String] = [:]
    // The last string of each field: a loop mostly repeats its mode and call-outs, and
    // comparing two equal strings (byte for byte) is cheaper than hashing one.
    var lastMode: (string: String, id: UInt32) = ("", TraceEvent.none)
    var lastKind: (string: String, id: UInt32) = ("", TraceEvent.none)
    var lastName: (string: String, id: UInt32) = ("", TraceEvent.none)
    // The tracer is closed or gone: no more events (``TraceStrings/release(from:)``).
    var released = false

    /// The id of `string`, added when new; `nil` when the table is full.
    mutating func intern(_ string: String) -> UInt32? {
      if let id = ids[ExactString(string)] { return id }
      guard strings.count < TraceStrings.capacity else { return nil }
      let id = UInt32(strings.count)
      strings.append(string)
      ids[ExactString(string)] = id
      return id
    }

    mutating func mode(_ string: String) -> UInt32? {
      if lastMode.id != TraceEvent.none, lastMode.string.utf8.elementsEqual(string.utf8) {
        return lastMode.id
      }
      guard let id = intern(string) else { return nil }
      lastMode = (string, id)
      return id
    }

    mutating func kind(_ string: String) -> UInt32? {
      if lastKind.id != TraceEvent.none, lastKind.string.utf8.elementsEqual(string.utf8) {
        return lastKind.id
      }
      guard let id = intern(string) else { return nil }
      lastKind = (string, id)
      return id
    }

    mutating func name(_ string: String) -> UInt32? {
      if lastName.id != TraceEvent.none, lastName.string.utf8.elementsEqual(string.utf8) {
        return lastName.id
      }
      guard let id = intern(string) else { return nil }
      lastName = (string, id)
      return id
    }

    mutating func thread(_ tid: pid_t) -> UInt32? {
      if lastThread.tid == tid, lastThread.id != TraceEvent.none { return lastThread.id }
      guard let id = threadNames[tid] else { return nil }
      lastThread = (tid, id)
      return id
    }
  }

  package init(runID: String, processID: Int32) {
    self.runID = runID
    self.processID = processID
    self.state = GuardedState(Table())
  }

  /// What ``stamp(_:mode:calloutKind:calloutName:sinks:)`` did with an event.
  package enum Stamp {
    /// Numbered, its ids filled in, and queued in the sinks.
    case delivered
    /// Numbered, but a string could not be added (the table is full): the caller sends a
    /// whole record instead.
    case full
    /// Dropped: the table was released (its tracer is closed), and the sinks may already
    /// have forgotten it.
    case released
  }

  /// Numbers `event`, fills in its thread and mode ids (and, for a call-out, its kind and
  /// name ids) and queues it in each of `sinks` (with the number each gave this table), all
  /// under the table's lock: so an event is in the sinks' queues before any
  /// ``release(from:)`` that follows it queues its release items. Called on the loop thread.
  ///
  /// The sinks come as an array, not as a closure that queues: calling such a closure cost
  /// the loop about 15 ns more per event (runloop-bench, tracing: 155 against 140 ns).
  package func stamp(
    _ event: inout TraceEvent, mode: String, calloutKind: String? = nil,
    calloutName: String? = nil, sinks: [(sink: any TraceEventSink, source: UInt32)]
  ) -> Stamp {
    let tid = event.tid
    var outcome = state.withLock { table -> Stamp? in
      guard !table.released else { return .released }
      table.seq &+= 1
      event.seq = table.seq
      guard let thread = table.thread(tid) else {
        // A thread known without an id: the table was full when it came, and still is.
        return table.unlistedThreadNames[tid] == nil ? nil : .full
      }
      event.thread = thread
      guard table.fill(&event, mode: mode, calloutKind: calloutKind, calloutName: calloutName)
      else { return .full }
      Self.deliver(&event, to: sinks)
      return .delivered
    }
    if outcome == nil {
      // First event of this thread: read its name outside the lock, once.
      let name = _readFirstLine("/proc/self/task/\(tid)/comm") ?? "thread-\(tid)"
      outcome = state.withLock { table -> Stamp in
        guard !table.released else { return .released }
        let id: UInt32
        if let existing = table.threadNames[tid] {
          id = existing
        } else {
          guard let added = table.intern(name) else {
            if table.unlistedThreadNames[tid] == nil { table.unlistedThreadNames[tid] = name }
            return .full
          }
          table.threadNames[tid] = added
          id = added
        }
        event.thread = id
        guard table.fill(&event, mode: mode, calloutKind: calloutKind, calloutName: calloutName)
        else { return .full }
        Self.deliver(&event, to: sinks)
        return .delivered
      }
    }
    return outcome ?? .full
  }

  /// Numbers `event` and fills in its ids without handing it anywhere; `false` when a string
  /// could not be added or the table is released. For tests of the encoders.
  package func stamp(
    _ event: inout TraceEvent, mode: String, calloutKind: String? = nil,
    calloutName: String? = nil
  ) -> Bool {
    stamp(&event, mode: mode, calloutKind: calloutKind, calloutName: calloutName, sinks: [])
      == .delivered
  }

  /// Queues `event` in each of `sinks`, with the sink's number for this table (under the
  /// table's lock).
  private static func deliver(
    _ event: inout TraceEvent, to sinks: [(sink: any TraceEventSink, source: UInt32)]
  ) {
    for (sink, source) in sinks {
      event.source = source
      sink._enqueue(event)
    }
  }

  /// Marks the table released and, under its lock, tells each of `sinks` to release it
  /// (``TraceEventSink/_release(_:)`` queues a release item): every event stamped before is
  /// already queued ahead of those items, and no event is stamped after. Returns `false`,
  /// doing nothing, when the table was already released.
  @discardableResult
  package func release(from sinks: [(sink: any TraceEventSink, source: UInt32)]) -> Bool {
    state.withLock { table in
      guard !table.released else { return false }
      table.released = true
      for (sink, source) in sinks { sink._release(source) }
      return true
    }
  }

  /// The thread name of `tid`, as events record it (the slow path and record sinks).
  func threadName(_ tid: pid_t) -> String {
    let known = state.withLock { table in
      table.threadNames[tid].map { table.strings[Int($0)] } ?? table.unlistedThreadNames[tid]
    }
    if let known { return known }
    let name = _readFirstLine("/proc/self/task/\(tid)/comm") ?? "thread-\(tid)"
    return state.withLock { table in
      if let id = table.threadNames[tid] { return table.strings[Int(id)] }
      if let unlisted = table.unlistedThreadNames[tid] { return unlisted }
      if let id = table.intern(name) {
        table.threadNames[tid] = id
      } else {
        table.unlistedThreadNames[tid] = name
      }
      return name
    }
  }

  /// The next record number, for a record built without an event.
  /// Numbers a whole record made off the loop thread (a stall report) and queues it in every
  /// sink, under the lock that numbers events, so that it cannot land behind the tracer's
  /// release items; `false` when the tracer is closed.
  func stampWhole(_ make: (UInt64) -> TraceRecord, sinks: [any TraceSink]) -> Bool {
    state.withLock { table in
      guard !table.released else { return false }
      table.seq &+= 1
      let record = make(table.seq)
      for sink in sinks { sink.enqueue(record) }
      return true
    }
  }

  func nextSequence() -> UInt64 {
    state.withLock { table in
      table.seq &+= 1
      return table.seq
    }
  }

  /// Forgets the thread name of `tid` (its thread exited; the tid may be reused). Events
  /// already queued keep resolving to it: the string stays in the table.
  func forgetThread(_ tid: pid_t) {
    state.withLock { table in
      table.threadNames[tid] = nil
      table.unlistedThreadNames[tid] = nil
      if table.lastThread.tid == tid { table.lastThread = (0, TraceEvent.none) }
    }
  }

  /// The strings as they are now: every id handed out before the call resolves in it.
  package func snapshot() -> Snapshot {
    Snapshot(runID: runID, processID: processID, strings: state.withLock { $0.strings })
  }

  /// A copy of the table for the writer thread, which reads it with no lock.
  package struct Snapshot {
    package let runID: String
    package let processID: Int32
    package let strings: [String]

    package func string(_ id: UInt32) -> String? {
      id == TraceEvent.none ? nil : strings[Int(id)]
    }

    /// The record `event` stands for.
    package func record(for event: TraceEvent) -> TraceRecord {
      var record = TraceRecord(
        run: runID, seq: event.seq, record: event.kind, timestamp: event.timestamp,
        wallTime: event.wallTime, pid: processID, tid: event.tid,
        thread: strings[Int(event.thread)], loop: event.loop, mode: strings[Int(event.mode)],
        iteration: event.iteration, depth: event.depth,
        step: event.step == 0 ? nil : Int(event.step))
      switch event.kind {
      case .activity:
        record.activity = TraceStrings.activityName(event.activity)
      case .callout:
        record.calloutKind = string(event.calloutKind)
        record.calloutName = string(event.calloutName)
        record.duration = event.duration
        if event.hasDue {
          record.dueAt = event.dueAt
          record.lateness = event.lateness
        }
        record.setSpan(event.span, cause: event.cause, trace: (event.traceHigh, event.traceLow))
      case .sleep:
        record.duration = event.duration
      case .loss:
        // Only the JSON sink writes these, never as an event.
        break
      case .stall, .recovery:
        // The watchdog sends these as whole records; an event of them carries the call-out
        // and the time awake.
        record.calloutKind = string(event.calloutKind)
        record.calloutName = string(event.calloutName)
        record.duration = event.duration
      }
      return record
    }
  }

  /// The name of an activity (a switch for the six single ones: `LoopActivity.name` builds
  /// a joined string every time).
  static func activityName(_ rawValue: UInt32) -> String {
    switch LoopActivity(rawValue: rawValue) {
    case .entry: "entry"
    case .beforeTimers: "beforeTimers"
    case .beforeSources: "beforeSources"
    case .beforeWaiting: "beforeWaiting"
    case .afterWaiting: "afterWaiting"
    case .exit: "exit"
    case let other: other.name
    }
  }
}

extension TraceStrings.Table {
  /// Fills in the mode, kind and name ids; `false` when one could not be added.
  fileprivate mutating func fill(
    _ event: inout TraceEvent, mode: String, calloutKind: String?, calloutName: String?
  ) -> Bool {
    guard let modeID = self.mode(mode) else { return false }
    event.mode = modeID
    if let calloutKind {
      guard let id = kind(calloutKind) else { return false }
      event.calloutKind = id
    }
    if let calloutName {
      guard let id = name(calloutName) else { return false }
      event.calloutName = id
    }
    return true
  }
}

/// A string that equals and hashes by its UTF-8 bytes, for the string table: Swift's `==`
/// on strings is canonical equivalence, which would merge names that differ in their bytes.
struct ExactString: Hashable {
  let string: String

  init(_ string: String) {
    self.string = string
  }

  static func == (lhs: ExactString, rhs: ExactString) -> Bool {
    lhs.string.utf8.elementsEqual(rhs.string.utf8)
  }

  func hash(into hasher: inout Hasher) {
    var string = string
    // Hashes the UTF-8 bytes in place, as `==` compares them (no String normalization).
    string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
  }
}
