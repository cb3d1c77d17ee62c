import Foundation
import RunLoopCore
import RunLoopJournal
import RunLoopTestSupport
import RunLoopTracing
import Testing

@Suite("The journald sink")
struct JournalSinkTests {
  /// Runs `passes` zero-timeout runs that each perform a source (five records a run), traced
  /// by `tracer`; returns how long the loop took.
  private func tracedBurst(_ tracer: LoopTracer, passes: Int) throws -> Duration {
    try onNewThread("journal-burst") { loop -> Duration in
      let source = CustomInputSource(name: "burst") {}
      try loop.add(source, mode: .default)
      tracer.attach(to: loop)
      let start = ContinuousClock.now
      for _ in 0..<passes {
        source.signal()
        try loop.run(mode: .default, timeout: .zero)
      }
      let elapsed = ContinuousClock.now - start
      tracer.detach()
      return elapsed
    }
  }

  /// Entries `journalctl` shows for `identifier`, as field dictionaries.
  private func journalEntries(identifier: String, match: [String] = []) throws -> [[String: String]]
  {
    _ = try runProgram("/usr/bin/journalctl", ["--sync"])
    let result = try runProgram(
      "/usr/bin/journalctl", ["-t", identifier, "-o", "json", "--no-pager"] + match)
    return try result.output.split(separator: "\n").map { line in
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      return (object ?? [:]).compactMapValues { $0 as? String }
    }
  }

  @Test(.enabled(if: journaldAvailable, "no journald could be started"))
  func journalctlReturnsTheJSONRecordsOneForOneWithRunloopFields() throws {
    let identifier = "runloop-test-\(UInt32.random(in: 0...UInt32.max))"
    let path = temporaryPath("journal.jsonl")
    defer { unlink(path) }
    let journal = try JournalSink(identifier: identifier)
    let tracer = LoopTracer(sinks: [try JSONLinesSink(path: path), journal])
    try onNewThread("journal-scenario") { loop in
      let source = CustomInputSource(name: "work") {}
      try loop.add(source, mode: .default)
      tracer.attach(to: loop)
      source.signal()
      try loop.run(mode: .default, timeout: .milliseconds(20))
    }
    tracer.close()
    let records = try TraceLog.read(contentsOf: path)
    #expect(records.count == 10)
    #expect(journal.statistics.sent == UInt64(records.count))
    var entries: [[String: String]] = []
    #expect(
      eventually(10) {
        entries = (try? journalEntries(identifier: identifier)) ?? []
        return entries.count >= records.count
      })
    #expect(entries.count == records.count)
    let bySequence = Dictionary(entries.map { ($0["RUNLOOP_SEQ"] ?? "", $0) }) { first, _ in first }
    for record in records {
      let entry = try #require(bySequence[String(record.seq)], "no entry for seq \(record.seq)")
      let runloopFields = entry.filter { $0.key.hasPrefix("RUNLOOP_") }
      let expected = Dictionary(
        uniqueKeysWithValues: record.fields.map { ("RUNLOOP_" + $0.key.uppercased(), $0.value) })
      #expect(runloopFields == expected)
      #expect(entry["TID"] == String(record.tid))
      #expect(entry["PRIORITY"] == "7")
      #expect(entry["SYSLOG_IDENTIFIER"] == identifier)
      #expect(entry["_PID"] == String(getpid()))
      let messageID =
        switch record.record {
        case .activity: JournalSink.MessageID.activity
        case .callout: JournalSink.MessageID.callout
        case .sleep: JournalSink.MessageID.sleep
        case .stall: JournalSink.MessageID.stall
        case .recovery: JournalSink.MessageID.recovery
        case .loss: JournalSink.MessageID.drops
        }
      #expect(entry["MESSAGE_ID"] == messageID)
      if let activity = record.activity {
        #expect(entry["RUNLOOP_ACTIVITY"] == activity)
        #expect(entry["MESSAGE"]?.hasSuffix(": \(activity)") == true)
      }
    }
  }

  @Test func absentJournalIsReportedAndTheLoopKeepsRunning() throws {
    // A socket file with nobody bound to it: sends fail with ECONNREFUSED, as
    // sd_journal_sendv does when journald is not running but its socket file remains.
    let socket = DatagramSocket(path: temporaryPath("absent.sock"))
    socket.close()
    let journal = try JournalSink(
      identifier: "runloop-absent", destination: .socket(path: socket.path))
    let tracer = LoopTracer(sinks: [journal])
    _ = try tracedBurst(tracer, passes: 100)
    #expect(journal.flush())
    let statistics = journal.statistics
    tracer.close()
    #expect(statistics.journalAbsent)
    #expect(statistics.lastError == ECONNREFUSED)
    #expect(statistics.failed == 500)
    #expect(statistics.absenceReports == 1)
    #expect(statistics.sent == 0)
  }

  @Test func stalledJournalDropsAndCountsWhileTheLoopKeepsRunning() throws {
    // A bound socket nobody reads: once its queue is full (net.unix.max_dgram_qlen), the
    // writer thread blocks in sendto, exactly as sd_journal_sendv blocks on a stalled journald.
    let socket = DatagramSocket(path: temporaryPath("stalled.sock"))
    let journal = try JournalSink(
      identifier: "runloop-stalled", destination: .socket(path: socket.path), capacity: 32,
      rateLimit: nil)
    let tracer = LoopTracer(sinks: [journal])
    let passes = 2_000
    _ = try tracedBurst(tracer, passes: passes)
    // The loop finished every pass although the journal took almost nothing.
    let stalled = journal.statistics
    #expect(stalled.dropped > 0)
    #expect(stalled.sent < UInt64(passes * 5) / 2)
    // The journal recovers: a reader drains the socket, the writer catches up and reports
    // the drops as an entry of their own.
    let datagrams = GuardedState<[String]>([])
    let reading = GuardedState(true)
    let reader = Thread {
      while reading.withLock({ $0 }) {
        let batch = socket.drain()
        datagrams.withLock { $0 += batch }
        if batch.isEmpty { usleep(200) }
      }
    }
    reader.start()
    #expect(journal.flush())
    tracer.close()
    #expect(eventually { datagrams.withLock { $0.count } >= Int(journal.statistics.sent) })
    reading.withLock { $0 = false }
    let received = datagrams.withLock { $0 }
    let reports = received.filter { $0.contains("RUNLOOP_RECORD=drops\n") }
    #expect(!reports.isEmpty)
    #expect(reports.allSatisfy { $0.contains("PRIORITY=4\n") })
    #expect(reports.allSatisfy { !$0.contains("RUNLOOP_RUN=\n") })
    #expect(reports.allSatisfy { $0.contains("MESSAGE_ID=\(JournalSink.MessageID.drops)\n") })
    let final = journal.statistics
    let reportedDrops = reports.compactMap { report -> UInt64? in
      guard
        let line = report.split(separator: "\n").first(where: { $0.hasPrefix("RUNLOOP_DROPPED=") })
      else { return nil }
      return UInt64(line.dropFirst("RUNLOOP_DROPPED=".count))
    }
    #expect(reportedDrops.reduce(0, +) == final.dropped)
    // Nothing vanished: every record was either delivered or counted as dropped.
    #expect(received.count - reports.count + Int(final.dropped) == passes * 5)
    #expect(final.sent - final.dropReports + final.dropped == UInt64(passes * 5))
  }

  @Test(.enabled(if: journaldAvailable, "no journald could be started"))
  func stoppedJournaldMakesTheSinkDropWhileTheLoopKeepsRunning() throws {
    // The machine's journald takes no argument. Other tests run journalds of their own
    // (`PrivateJournald`), with the same process name and their namespace as argument:
    // stopping and resuming one of those instead would break the test that owns it (it
    // did: a concurrent test found its stopped journald resumed and reading).
    let pids = try runProgram("/usr/bin/pgrep", ["-x", "systemd-journal"]).output
      .split(separator: "\n").compactMap { pid_t($0) }
      .filter { commandLineArgumentCount(of: $0) == 1 }
    let journald = try #require(pids.first, "journald answers but no systemd-journal process")
    let identifier = "runloop-stopped-\(UInt32.random(in: 0...UInt32.max))"
    let journal = try JournalSink(identifier: identifier, capacity: 64)
    let tracer = LoopTracer(sinks: [journal])
    #expect(kill(journald, SIGSTOP) == 0)
    let passes = 400
    let elapsed: Duration
    do {
      defer { kill(journald, SIGCONT) }
      elapsed = try tracedBurst(tracer, passes: passes)
    }
    let stalled = journal.statistics
    #expect(stalled.dropped > 0)
    // Loosely: 400 passes take milliseconds; waiting on journald would have hung.
    #expect(elapsed < .seconds(5))
    #expect(journal.flush())
    tracer.close()
    let final = journal.statistics
    #expect(final.sent - final.dropReports + final.dropped == UInt64(passes * 5))
    var reports: [[String: String]] = []
    #expect(
      eventually(10) {
        reports =
          (try? journalEntries(identifier: identifier, match: ["RUNLOOP_RECORD=drops"])) ?? []
        return !reports.isEmpty
      })
    let reported = reports.compactMap { $0["RUNLOOP_DROPPED"].flatMap { UInt64($0) } }
    #expect(reported.reduce(0, +) == final.dropped)
  }
}

/// How many arguments (the program included) process `pid` was started with, from
/// `/proc/PID/cmdline`; 0 when it cannot be read.
private func commandLineArgumentCount(of pid: pid_t) -> Int {
  guard let bytes = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return 0 }
  return bytes.split(separator: 0).count
}
