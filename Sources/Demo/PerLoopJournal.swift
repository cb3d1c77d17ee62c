import Glibc
import RunLoopCore
import RunLoopJournal
import RunLoopTracing

/// A trace sink that gives each run loop its own ``JournalSink`` (one queue and writer
/// thread per loop), so the summary can say how many journald records each loop lost. The
/// sinks are made on a loop's first record; every entry carries the same identifier.
///
/// A loop whose sink could not be made loses its records to journald: they are counted per
/// loop (``drops(ofLoop:)``) and in total with the first error (``sinkFailure``),
/// so the summary says so instead of reporting a journal that got everything.
final class PerLoopJournal: TraceSink, Sendable {
  /// Makes one loop's sink.
  typealias SinkMaker =
    @Sendable (String, JournalSink.Destination) throws(RunLoopError) -> JournalSink

  private struct State {
    var byLoop: [UInt64: JournalSink] = [:]
    var closed = false
    /// Records of loops whose sink could not be made, per loop.
    var lostWithoutSink: [UInt64: UInt64] = [:]
    var sinkError: String?
  }

  let identifier: String
  let destination: JournalSink.Destination
  private let makeSink: SinkMaker
  // Guarded by its own lock.
  private let sinks = GuardedState(State())

  init(
    identifier: String, destination: JournalSink.Destination,
    makeSink: @escaping SinkMaker = { identifier, destination throws(RunLoopError) in
      try JournalSink(identifier: identifier, destination: destination)
    }
  ) {
    self.identifier = identifier
    self.destination = destination
    self.makeSink = makeSink
  }

  func enqueue(_ record: TraceRecord) {
    let existing = sinks.withLock { state -> JournalSink?? in
      if state.closed { return .some(nil) }
      if let sink = state.byLoop[record.loop] { return sink }
      if state.lostWithoutSink[record.loop] != nil {
        state.lostWithoutSink[record.loop]! += 1
        return .some(nil)
      }
      return nil
    }
    if let existing {
      existing?.enqueue(record)
      return
    }
    // First record of this loop: make its sink outside the lock (it starts a thread).
    let fresh: JournalSink
    do {
      fresh = try makeSink(identifier, destination)
    } catch {
      sinks.withLock { state in
        state.lostWithoutSink[record.loop, default: 0] += 1
        if state.sinkError == nil { state.sinkError = error.message }
      }
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
  /// handed everything over (a loop without a sink did not). What a sink left behind is in
  /// its statistics (`unsent`).
  func close(before deadline: ContinuousClock.Instant) -> Bool {
    let (all, lost) = sinks.withLock { state -> ([JournalSink], Bool) in
      state.closed = true
      return (Array(state.byLoop.values), !state.lostWithoutSink.isEmpty)
    }
    var complete = !lost
    for sink in all where !sink.close(before: deadline) { complete = false }
    return complete
  }

  /// Entries of all loops' sinks not handed to journald (see `JournalSinkStatistics.unsent`).
  var unsent: UInt64 {
    sinks.withLock { Array($0.byLoop.values) }.reduce(0) { $0 + $1.statistics.unsent }
  }

  /// Entries that loops' sinks did not get to journald: dropped (the queue full or over the
  /// rate limit) or failed (refused, or no journal answered). The entries of a loop whose
  /// sink could not be made are not among them: ``sinkFailure`` counts those.
  var droppedOrFailed: UInt64 {
    sinks.withLock { Array($0.byLoop.values) }.reduce(0) {
      let statistics = $1.statistics
      return $0 + statistics.dropped + statistics.failed
    }
  }

  /// Entries of one loop that journald did not get, `unsent` ones included (0 for a loop
  /// that sent nothing).
  func drops(ofLoop loop: UInt64) -> UInt64 {
    let (sink, lost) = sinks.withLock { ($0.byLoop[loop], $0.lostWithoutSink[loop] ?? 0) }
    guard let statistics = sink?.statistics else { return lost }
    return lost + statistics.dropped + statistics.failed + statistics.unsent
  }

  /// Why a loop's sink could not be made (the first such error), and how many loops had
  /// none; `nil` when every loop had its sink.
  var sinkFailure: (message: String, loops: Int, entries: UInt64)? {
    sinks.withLock { state in
      state.sinkError.map {
        ($0, state.lostWithoutSink.count, state.lostWithoutSink.values.reduce(0, +))
      }
    }
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
