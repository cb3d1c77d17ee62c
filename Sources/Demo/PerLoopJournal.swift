import Glibc
import RunLoopCore
import RunLoopJournal
import RunLoopObservers

/// A trace sink that gives each run loop its own ``JournalSink`` (one queue and writer
/// thread per loop), so the summary can say how many journald records each loop lost. The
/// sinks are made on a loop's first record; every entry carries the same identifier.
final class PerLoopJournal: TraceSink, Sendable {
  let identifier: String
  let destination: JournalSink.Destination
  // Guarded by its own lock: the sink of each loop id, and whether close() ran.
  private let sinks = GuardedState<(byLoop: [UInt64: JournalSink], closed: Bool)>(([:], false))

  init(identifier: String, destination: JournalSink.Destination) {
    self.identifier = identifier
    self.destination = destination
  }

  func enqueue(_ record: TraceRecord) {
    let existing = sinks.withLock { $0.closed ? nil : $0.byLoop[record.loop] }
    if let existing {
      existing.enqueue(record)
      return
    }
    // First record of this loop: make its sink outside the lock (it starts a thread).
    // With no extra fields and the default rate limit the initializer has nothing to refuse.
    guard let fresh = try? JournalSink(identifier: identifier, destination: destination) else {
      return
    }
    let chosen = sinks.withLock { state -> JournalSink? in
      if state.closed { return nil }
      if let other = state.byLoop[record.loop] { return other }
      state.byLoop[record.loop] = fresh
      return fresh
    }
    if chosen !== fresh { fresh.close() }
    chosen?.enqueue(record)
  }

  func close() {
    _ = close(before: .now + .seconds(5))
  }

  /// Closes every loop's sink by one `deadline` (not one bound per sink in turn: with
  /// journald stalled that made shutdown take 5 s per loop); returns whether all of them
  /// handed everything over. What a sink left behind is in its statistics (`unsent`).
  func close(before deadline: ContinuousClock.Instant) -> Bool {
    let all = sinks.withLock { state -> [JournalSink] in
      state.closed = true
      return Array(state.byLoop.values)
    }
    var complete = true
    for sink in all where !sink.close(before: deadline) { complete = false }
    return complete
  }

  /// Entries of all loops' sinks not handed to journald (see `JournalSinkStatistics.unsent`).
  var unsent: UInt64 {
    sinks.withLock { Array($0.byLoop.values) }.reduce(0) { $0 + $1.statistics.unsent }
  }

  /// Entries of all loops' sinks that journald did not get: dropped (the queue full or over
  /// the rate limit) or failed (refused, or no journal answered).
  var droppedOrFailed: UInt64 {
    sinks.withLock { Array($0.byLoop.values) }.reduce(0) {
      let statistics = $1.statistics
      return $0 + statistics.dropped + statistics.failed
    }
  }

  /// The journald statistics of one loop's sink, if that loop sent anything.
  func statistics(ofLoop loop: UInt64) -> JournalSinkStatistics? {
    sinks.withLock { $0.byLoop[loop] }?.statistics
  }

  /// Whether a journal answers at `socketPath`: the socket exists and accepts a datagram
  /// connection. libsystemd returns success when the socket file is missing (the entry is
  /// lost), so the demo checks before it promises anything.
  static func journalAnswers(at socketPath: String) -> Bool {
    guard access(socketPath, F_OK) == 0, socketPath.utf8.count < 108 else { return false }
    let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { Glibc.close(descriptor) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    // `sun_path` is a C array (a tuple in Swift), and `connect(2)` takes a `sockaddr`
    // pointer: both are reached through raw pointers for the length of the calls.
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
      for (index, byte) in socketPath.utf8.enumerated() { buffer[index] = byte }
    }
    let status = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    return status == 0
  }
}
