import CSystemdJournal
import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTracing

/// A trace sink that sends every ``/RunLoopTracing/TraceRecord`` to the systemd journal
/// through libsystemd's `sd_journal_sendv`, on a writer thread.
///
/// Each record becomes one journal entry whose fields are the JSON keys in upper case with
/// the prefix `RUNLOOP_` (`RUNLOOP_ACTIVITY=beforeWaiting`, `RUNLOOP_ITERATION=12`, ...; the
/// values are exactly the JSON values), plus `MESSAGE` for people, `PRIORITY` (7, debug; a
/// stall 4, warning; a recovery 5, notice),
/// `SYSLOG_IDENTIFIER`, `TID` (journald records no thread id of its own) and a fixed
/// `MESSAGE_ID` per record kind (``MessageID``).
///
/// journald is best effort, so the traced loop never waits for it: `sd_journal_sendv` blocks
/// while journald is stalled, so the loop thread only puts the record in a bounded queue. When
/// the queue is full the record is dropped and counted, and the count is sent as an entry of
/// its own (`RUNLOOP_RECORD=drops`, priority 4) once the journal takes entries again. When no
/// journal answers, that is reported once on standard error and the program goes on.
/// journald also drops entries silently past its per-service rate limit (10,000 per 30 s by
/// default), so the sink keeps under it with a ``RateLimit`` of its own (on by default):
/// records past it are dropped, counted and reported like those of a full queue. Keep the
/// JSON Lines sink for a complete record.
///
/// ```swift
/// let journal = JournalSink(identifier: "my-service")
/// let tracer = LoopTracer(sinks: [journal, try JSONLinesSink(path: "/tmp/loop.jsonl")])
/// tracer.attach(to: .current)
/// ```
///
/// Then `journalctl -t my-service -o json` shows the entries.
public final class JournalSink: TraceSink, TraceEventSink, Sendable {
  /// The `SYSLOG_IDENTIFIER` of every entry.
  public let identifier: String
  /// Where entries go.
  public let destination: Destination
  /// The most records the queue holds before it drops.
  public let capacity: Int
  /// The sink's own rate limit, or `nil` for none.
  ///
  /// ```swift
  /// let limit = sink.rateLimit
  /// ```
  public let rateLimit: RateLimit?

  private let emitter: JournalEmitter
  private let writer: WriterThread<TraceItem>

  /// Creates the sink and starts its writer thread.
  ///
  /// - Parameters:
  ///   - identifier: the `SYSLOG_IDENTIFIER` (what `journalctl -t` filters on).
  ///   - destination: the system journal, or a native-protocol socket.
  ///   - capacity: the queue's bound; records beyond it are dropped and counted.
  ///   - extraFields: more fields for every entry (names must be valid journal field
  ///     names: upper case letters, digits, underscores, not starting with `_` or a digit,
  ///     at most 64 characters).
  ///   - rateLimit: the sink's own limit, kept under journald's (``RateLimit``); `nil` for
  ///     none (when journald's limit is raised or off).
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for an extra field name
  ///   journald would refuse, or a rate limit with no burst or no interval.
  ///
  /// ```swift
  /// let sink = try JournalSink(identifier: "worker", capacity: 4096, extraFields: ["RUNLOOP_TEST":
  /// "1"])
  /// ```
  public init(
    identifier: String = "runloop", destination: Destination = .systemJournal,
    capacity: Int = 8192, extraFields: [String: String] = [:],
    rateLimit: RateLimit? = .journaldDefault
  ) throws(RunLoopError) {
    for name in extraFields.keys {
      guard Self.isValidFieldName(name) else {
        throw RunLoopError.invalidArgument(
          "JournalSink: extra field name '\(name)' is not a journal field name (upper case "
            + "letters, digits and underscores, not starting with an underscore or a digit, 1 "
            + "to 64 characters)")
      }
    }
    if let rateLimit, rateLimit.burst < 1 || rateLimit.interval <= .zero {
      throw RunLoopError.invalidArgument(
        "JournalSink: a rate limit needs a burst of at least 1 and a positive interval")
    }
    self.identifier = identifier
    self.destination = destination
    self.capacity = max(1, capacity)
    self.rateLimit = rateLimit
    let emitter = JournalEmitter(
      identifier: identifier, transport: JournalTransport(destination),
      extraFields: extraFields.sorted { $0.key < $1.key }, rateLimit: rateLimit)
    self.emitter = emitter
    // The loop thread queues compact events from a tracer; the writer thread builds their
    // records (the strings included) before it sends them.
    let writer = WriterThread<TraceItem>(name: "trace-journal", capacity: self.capacity) {
      batch in emitter.send(emitter.sources.records(batch))
    }
    self.writer = writer
    emitter.dropCounter = { [weak writer] in writer?.dropped ?? 0 }
    writer.start()
  }

  /// Queues `record` for the writer thread, or drops and counts it when the queue is full.
  /// Called on the loop thread; never waits for journald.
  ///
  /// ```swift
  /// sink.enqueue(record)  // on the loop thread; returns at once
  /// ```
  public func enqueue(_ record: TraceRecord) {
    writer.enqueue(.record(record))
  }

  package func _register(_ strings: TraceStrings) -> UInt32 {
    emitter.sources.register(strings)
  }

  package func _enqueue(_ event: TraceEvent) {
    writer.enqueue(.event(event))
  }

  package func _release(_ source: UInt32) {
    // Behind the tracer's events in the queue, never dropped for a full queue; once the
    // writer has finished, nothing of the tracer is left to send, and the table goes at once.
    if !writer.enqueueControl(.release(source)) { emitter.sources.release(source) }
  }

  package var _registeredTables: Int { emitter.sources.count }

  /// Waits until every record queued so far has been handed to journald (or failed), up to
  /// `timeout`; returns whether it got there.
  ///
  /// ```swift
  /// sink.flush(timeout: .seconds(2))
  /// ```
  @discardableResult
  public func flush(timeout: Duration = .seconds(10)) -> Bool {
    writer.flush(timeout: timeout)
  }

  /// Sends what is queued (waiting at most 5 seconds for a stalled journald), then a final
  /// drop report if records were dropped since the last one.
  ///
  /// ```swift
  /// sink.close()
  /// ```
  public func close() {
    close(timeout: .seconds(5))
  }

  /// Sends what is queued, waiting at most `timeout` for a stalled journald, then a final
  /// drop report; returns whether everything queued was handed to journald (or failed, or
  /// was dropped and counted). When the time runs out, what is left stays with the writer
  /// thread, which sends it should journald wake up before the process ends; until then
  /// ``JournalSinkStatistics/unsent`` counts it, so a program can report the entries its
  /// shutdown left behind.
  ///
  /// ```swift
  /// if !sink.close(timeout: .seconds(1)) {
  ///   print("\(sink.statistics.unsent) entries never reached journald")
  /// }
  /// ```
  @discardableResult
  public func close(timeout: Duration) -> Bool {
    guard writer.close(timeout: timeout) else { return false }
    emitter.reportDrops(final: true)
    return true
  }

  /// ``close(timeout:)`` with the time left until `deadline`.
  ///
  /// ```swift
  /// let done = sink.close(before: .now + .seconds(2))
  /// ```
  public func close(before deadline: ContinuousClock.Instant) -> Bool {
    close(timeout: max(.zero, deadline - ContinuousClock.now))
  }

  /// Whether journald takes `name` as a field name from a client: the name
  /// ``JournalLogHandler/fieldName(for:)`` would make of it is itself, so one rule serves the
  /// sink's extra fields and the log handler's metadata.
  static func isValidFieldName(_ name: String) -> Bool {
    JournalLogHandler.fieldName(for: name) == name
  }

  /// What the sink has done so far.
  ///
  /// ```swift
  /// let stats = sink.statistics
  /// print(stats.sent, stats.dropped, stats.failed, stats.journalAbsent)
  /// ```
  public var statistics: JournalSinkStatistics {
    emitter.statistics(dropped: writer.dropped, accepted: writer.accepted)
  }
}

/// Turns records into journal entries and sends them, on the writer thread.
final class JournalEmitter: @unchecked Sendable {
  // Unchecked: each `var` below says why it needs no lock (set once in init, before the
  // object is shared, or touched on one thread only); the rest is locked or atomic.
  let identifier: String
  let transport: JournalTransport
  let extraFields: [(key: String, value: String)]
  // The string tables of the tracers feeding the sink.
  let sources = TraceSources()
  // Set once, right after init, before the writer thread starts.
  var dropCounter: @Sendable () -> UInt64 = { 0 }
  // Guarded by its own lock: delivery counts.
  private let counts = GuardedState(Counts())

  struct Counts {
    var sent: UInt64 = 0
    var failed: UInt64 = 0
    var dropsReported: UInt64 = 0
    var failedReported: UInt64 = 0
    var dropReports: UInt64 = 0
    var absent = false
    var absentReported = false
    // This sink wrote the "no journal answers" line (the first of the process to find no
    // journal at its destination).
    var absenceWritten = false
    var lastError: Int32 = 0
    var lastRun = ""
    // Records the sink's own rate limit dropped (counted as drops, too).
    var rateLimited: UInt64 = 0
    var rateLimitedReported: UInt64 = 0
    var lastReport: ContinuousClock.Instant?
  }

  // The destinations and errors "no journal answers" has been written for, in this process.
  private static let absenceNoted = GuardedState<Set<String>>([])

  // Touched by the writer thread only: the rate limit's bucket.
  private var bucket: TokenBucket?

  init(
    identifier: String, transport: JournalTransport, extraFields: [(key: String, value: String)],
    rateLimit: JournalSink.RateLimit?
  ) {
    self.identifier = identifier
    self.transport = transport
    self.extraFields = extraFields
    self.bucket = rateLimit.map(TokenBucket.init)
  }

  func send(_ batch: [TraceRecord]) {
    // Drop reports carry the run id of the records around them.
    if let run = batch.first?.run { counts.withLock { $0.lastRun = run } }
    reportDrops(final: false)
    for record in batch {
      // Stalls and recoveries are few and are what an operator looks for: they pass the
      // sink's own rate limit (journald's still applies).
      let urgent = record.record == .stall || record.record == .recovery
      if !urgent, bucket != nil, !bucket!.take() {
        counts.withLock { $0.rateLimited += 1 }
        continue
      }
      deliver(entry(for: record), run: record.run)
    }
  }

  /// Sends a drops entry when records were dropped (queue full or over the rate limit) or
  /// failed since the last one; at most once a second unless `final`.
  func reportDrops(final: Bool) {
    let queueDrops = dropCounter()
    let now = ContinuousClock.now
    let pending = counts.withLock { counts -> (UInt64, UInt64, UInt64, UInt64, String)? in
      let dropped = queueDrops + counts.rateLimited
      guard dropped > counts.dropsReported || counts.failed > counts.failedReported,
        !counts.absent
      else { return nil }
      if !final, let last = counts.lastReport, now - last < .seconds(1) { return nil }
      return (
        dropped, dropped - counts.dropsReported, counts.rateLimited - counts.rateLimitedReported,
        counts.failed - counts.failedReported, counts.lastRun
      )
    }
    guard let (dropped, newDrops, newRateLimited, newFailures, run) = pending else { return }
    let message =
      "runloop trace: \(newDrops) records dropped (\(newDrops - newRateLimited) journal queue "
      + "full, \(newRateLimited) over the rate limit), \(newFailures) not delivered"
    var fields: [(String, String)] = [
      ("MESSAGE", message), ("PRIORITY", "4"), ("SYSLOG_IDENTIFIER", identifier),
      ("MESSAGE_ID", JournalSink.MessageID.drops), ("RUNLOOP_RECORD", "drops"),
      ("RUNLOOP_RUN", run), ("RUNLOOP_DROPPED", String(newDrops)),
      ("RUNLOOP_DROPPED_TOTAL", String(dropped)), ("RUNLOOP_RATE_LIMITED", String(newRateLimited)),
      ("RUNLOOP_FAILED", String(newFailures)),
    ]
    fields += extraFields.map { ($0.key, $0.value) }
    if transport.send(fields) == 0 {
      counts.withLock { counts in
        counts.dropsReported = dropped
        counts.rateLimitedReported += newRateLimited
        counts.failedReported += newFailures
        counts.dropReports += 1
        counts.sent += 1
        counts.lastReport = now
      }
    }
  }

  private func deliver(_ fields: [(String, String)], run: String) {
    let result = transport.send(fields)
    let reportAbsent = counts.withLock { counts -> Int32? in
      counts.lastRun = run
      if result == 0 {
        counts.sent += 1
        counts.absent = false
        return nil
      }
      counts.failed += 1
      counts.lastError = -result
      let absent = [ECONNREFUSED, ENOENT, ENOTCONN, ECONNRESET].contains(-result)
      counts.absent = absent
      guard absent, !counts.absentReported else { return nil }
      counts.absentReported = true
      // Once per process, destination and reason, not once per sink: a program with a sink
      // per loop says it once.
      let key = "\(transport.destination)\u{0}\(-result)"
      guard Self.absenceNoted.withLock({ $0.insert(key).inserted }) else { return nil }
      counts.absenceWritten = true
      return -result
    }
    if let error = reportAbsent {
      let reason = String(cString: strerror(error))
      let text =
        "RunLoopJournal: no journal answers (\(reason)); trace entries for the journal are "
        + "counted as not delivered and the program goes on\n"
      _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
  }

  func entry(for record: TraceRecord) -> [(String, String)] {
    var fields: [(String, String)] = [
      ("MESSAGE", Self.message(for: record)), ("PRIORITY", Self.priority(for: record.record)),
      ("SYSLOG_IDENTIFIER", identifier), ("TID", String(record.tid)),
      ("MESSAGE_ID", Self.messageID(for: record.record)),
    ]
    for (key, value) in record.fields {
      fields.append(("RUNLOOP_" + key.uppercased(), value))
    }
    fields += extraFields.map { ($0.key, $0.value) }
    return fields
  }

  static func messageID(for kind: TraceRecord.Kind) -> String {
    switch kind {
    case .activity: JournalSink.MessageID.activity
    case .callout: JournalSink.MessageID.callout
    case .sleep: JournalSink.MessageID.sleep
    case .stall: JournalSink.MessageID.stall
    case .recovery: JournalSink.MessageID.recovery
    // The JSON sink's own record; journald reports its own losses as drops.
    case .loss: JournalSink.MessageID.drops
    }
  }

  /// Trace records are debug detail (7); a stall is a warning (4), its recovery a notice (5).
  static func priority(for kind: TraceRecord.Kind) -> String {
    switch kind {
    case .activity, .callout, .sleep: "7"
    case .stall, .loss: "4"
    case .recovery: "5"
    }
  }

  static func message(for record: TraceRecord) -> String {
    let place = "loop \(record.loop) [\(record.mode)] iteration \(record.iteration)"
    switch record.record {
    case .activity:
      return "\(place) depth \(record.depth): \(record.activity ?? "?")"
    case .callout:
      var text =
        "\(place): \(record.calloutKind ?? "?") '\(record.calloutName ?? "")' ran "
        + milliseconds(record.duration ?? 0)
      if let lateness = record.lateness { text += ", \(milliseconds(lateness)) after due" }
      if let causeSpan = record.causeSpan {
        let origin = record.causePid.map { "process \($0) " } ?? ""
        text +=
          ", caused by \(origin)thread \(record.causeTid ?? 0)"
          + (record.causeLoop.map { " loop \($0)" } ?? "") + " span \(causeSpan)"
      }
      return text
    case .sleep:
      return "\(place): slept \(milliseconds(record.duration ?? 0))"
    case .stall:
      let callout =
        record.calloutKind.map { "in \($0) '\(record.calloutName ?? "")'" } ?? "outside call-outs"
      return
        "\(place) depth \(record.depth): STALLED, awake \(milliseconds(record.duration ?? 0)) "
        + "without sleeping, \(callout) (thread \(record.thread) [\(record.tid)] state "
        + "\(record.threadState ?? "?"), waiting in \(record.wchan ?? "?"))"
    case .recovery:
      return
        "\(place): recovered from a stall, awake \(milliseconds(record.duration ?? 0)) in all"
    case .loss:
      return "\(record.lost ?? 0) trace records lost before this one (by the JSON sink's writer)"
    }
  }

  static func milliseconds(_ nanoseconds: Int64) -> String {
    let micro = nanoseconds / 1000
    let fraction = String(abs(micro) % 1000)
    let sign = micro < 0 ? "-" : ""
    return
      "\(sign)\(abs(micro) / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) ms"
  }

  /// The counts, with `dropped` records refused by a full queue and `accepted` records
  /// taken into it.
  func statistics(dropped: UInt64, accepted: UInt64) -> JournalSinkStatistics {
    counts.withLock { counts in
      // Every accepted record is sent, failed, over the rate limit, or not handled yet.
      let handled = (counts.sent - counts.dropReports) + counts.failed + counts.rateLimited
      return JournalSinkStatistics(
        sent: counts.sent, dropped: dropped + counts.rateLimited, failed: counts.failed,
        dropReports: counts.dropReports, journalAbsent: counts.absent,
        lastError: counts.lastError == 0 ? nil : counts.lastError,
        absenceReports: counts.absenceWritten ? 1 : 0, rateLimited: counts.rateLimited,
        unsent: accepted > handled ? accepted - handled : 0)
    }
  }
}

/// Sends one entry: through `sd_journal_sendv`, or as one native-protocol datagram.
struct JournalTransport: Sendable {
  let destination: JournalSink.Destination

  init(_ destination: JournalSink.Destination) {
    self.destination = destination
  }

  /// Returns 0 or a negative errno.
  func send(_ fields: [(String, String)]) -> Int32 {
    switch destination {
    case .systemJournal: return sendThroughLibsystemd(fields)
    case .socket(let path): return sendDatagram(fields, to: path)
    }
  }

  /// Where `sd_journal_sendv` sends.
  static let systemSocketPath = "/run/systemd/journal/socket"

  private func sendThroughLibsystemd(_ fields: [(String, String)]) -> Int32 {
    // Measured: with no socket file at all, sd_journal_sendv returns 0 and the entry is
    // lost (libsystemd fails silently on ENOENT). Look first, so that absence is reported.
    guard access(Self.systemSocketPath, F_OK) == 0 else { return -ENOENT }
    // One buffer holds every "NAME=value"; the iovecs point into it.
    var bytes: [UInt8] = []
    var ranges: [(offset: Int, count: Int)] = []
    for (name, value) in fields {
      let start = bytes.count
      bytes += name.utf8
      bytes.append(UInt8(ascii: "="))
      bytes += value.utf8
      ranges.append((start, bytes.count - start))
    }
    // sd_journal_sendv takes an iovec per field: the vectors point into `bytes`, in place,
    // for the length of the call.
    return bytes.withUnsafeMutableBytes { buffer -> Int32 in
      let base = buffer.baseAddress!
      let vectors = ranges.map { iovec(iov_base: base + $0.offset, iov_len: $0.count) }
      return vectors.withUnsafeBufferPointer {
        csj_journal_sendv(UnsafeRawPointer($0.baseAddress), Int32($0.count))
      }
    }
  }

  /// journald's native protocol: `NAME=value\n`, or for a value with a newline
  /// `NAME\n`, its length as 64-bit little endian, the value, `\n`.
  static func datagram(_ fields: [(String, String)]) -> [UInt8] {
    var bytes: [UInt8] = []
    for (name, value) in fields {
      bytes += name.utf8
      if value.utf8.contains(UInt8(ascii: "\n")) {
        bytes.append(UInt8(ascii: "\n"))
        var length = UInt64(value.utf8.count).littleEndian
        // The native protocol's binary field: its length as 8 little-endian bytes.
        withUnsafeBytes(of: &length) { bytes += $0 }
      } else {
        bytes.append(UInt8(ascii: "="))
      }
      bytes += value.utf8
      bytes.append(UInt8(ascii: "\n"))
    }
    return bytes
  }

  /// Sends one entry as a datagram without ever waiting: to the socket of `destination` (the
  /// system journal's own socket for `.systemJournal`); `-EAGAIN` when journald's queue is
  /// full. For log lines sent on the caller's thread, which a stalled journald must not hold.
  func sendWithoutWaiting(_ fields: [(String, String)]) -> Int32 {
    switch destination {
    case .systemJournal:
      return sendDatagram(fields, to: Self.systemSocketPath, flags: Int32(MSG_DONTWAIT))
    case .socket(let path): return sendDatagram(fields, to: path, flags: Int32(MSG_DONTWAIT))
    }
  }

  private func sendDatagram(_ fields: [(String, String)], to path: String, flags: Int32 = 0)
    -> Int32
  {
    let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { return -errno }
    defer { close(descriptor) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let pathBytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard pathBytes.count < capacity else { return -ENAMETOOLONG }
    // `sun_path` is a C array (a tuple in Swift), and sendto(2) takes a `sockaddr` pointer:
    // both are reached through raw pointers for the length of the calls.
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: pathBytes)
      raw[pathBytes.count] = 0
    }
    let payload = Self.datagram(fields)
    let sent = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
        payload.withUnsafeBytes { body in
          sendto(
            descriptor, body.baseAddress, body.count, Int32(MSG_NOSIGNAL) | flags, socketAddress,
            socklen_t(MemoryLayout<sockaddr_un>.size))
        }
      }
    }
    return sent < 0 ? -errno : 0
  }
}
