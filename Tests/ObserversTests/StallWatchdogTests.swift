import Foundation
import RunLoopCore
import RunLoopJournal
import RunLoopObservers
import RunLoopTestSupport
import RunLoopTracing
import Testing

@Suite("The stall watchdog")
struct StallWatchdogTests {
  /// Runs `body` on a fresh loop thread watched by a watchdog of `threshold`, traced into a
  /// collecting sink (and `extraSinks`); returns the records, the loop's thread id and
  /// whatever `body` returned.
  private func watched<T: Sendable>(
    threshold: Duration, extraSinks: [any TraceSink] = [], runID: String = "stall",
    _ body: @escaping @Sendable (EventRunLoop) throws -> T
  ) throws -> (records: [TraceRecord], tid: Int32, value: T) {
    let sink = CollectingSink()
    let tracer = LoopTracer(sinks: [sink] + extraSinks, runID: runID)
    let watchdog = StallWatchdog(threshold: threshold, reportingTo: tracer)
    let (tid, value) = try onNewThread("watched") { loop -> (Int32, T) in
      tracer.attach(to: loop)
      watchdog.attach(to: loop)
      let value = try body(loop)
      return (loop.threadID, value)
    }
    watchdog.close()
    tracer.close()
    return (sink.all.sorted { $0.seq < $1.seq }, tid, value)
  }

  @Test func aLoopAwakePastTheThresholdIsReportedInItsCalloutThenRecovered() throws {
    let (records, tid, _) = try watched(threshold: .milliseconds(100)) { loop in
      loop.perform(name: "slow-job") { usleep(400_000) }
      try loop.run(mode: .default, timeout: .milliseconds(500))
    }
    let stalls = records.filter { $0.record == .stall }
    let recoveries = records.filter { $0.record == .recovery }
    try #require(stalls.count == 1 && recoveries.count == 1, "\(records.map(\.record))")
    let stall = stalls[0]
    #expect(stall.calloutKind == "block")
    #expect(stall.calloutName == "slow-job")
    #expect(stall.mode == "default" && stall.depth == 1)
    #expect(stall.tid == tid && stall.thread == "watched")
    #expect((stall.duration ?? 0) >= 100_000_000)
    // Asleep in usleep, as the kernel sees it from outside.
    #expect(stall.threadState == "S")
    #expect(stall.wchan?.isEmpty == false)
    let recovery = recoveries[0]
    let job = try #require(records.first { $0.calloutName == "slow-job" })
    #expect(stall.seq < recovery.seq)
    #expect(recovery.timestamp == stall.timestamp)
    #expect((recovery.duration ?? 0) >= (job.duration ?? .max))
    #expect((recovery.duration ?? 0) > (stall.duration ?? .max))
    // The recovery comes when the loop goes to sleep again, after the call-out's record.
    #expect(job.seq < recovery.seq)
  }

  @Test func aLoopThatKeepsSleepingIsNeverReported() throws {
    // Four thresholds' worth of short awake stretches between sleeps (the threshold is
    // generous: a loaded machine may keep a thread off the CPU for tens of milliseconds).
    let (records, _, _) = try watched(threshold: .milliseconds(150)) { loop in
      let until = ContinuousClock.now + .milliseconds(600)
      while ContinuousClock.now < until {
        loop.perform(name: "quick") {}
        try loop.run(mode: .default, timeout: .milliseconds(10))
      }
    }
    #expect(records.contains { $0.calloutName == "quick" })
    #expect(!records.contains { $0.record == .stall || $0.record == .recovery })
  }

  @Test func theInnermostCalloutOfANestedRunIsTheOneNamed() throws {
    let (records, _, _) = try watched(threshold: .milliseconds(100)) { loop in
      let inner = LoopMode("inner")
      let keepAlive = CustomInputSource(name: "keep-alive") {}
      try loop.add(keepAlive, mode: inner)
      loop.perform(name: "outer") {
        loop.perform(inModes: [inner], name: "inner-spin") { burn(.milliseconds(300)) }
        _ = try? loop.run(mode: inner, timeout: .zero)
      }
      try loop.run(mode: .default, timeout: .milliseconds(400))
    }
    let stall = try #require(records.first { $0.record == .stall })
    #expect(stall.calloutName == "inner-spin")
    #expect(stall.mode == "inner" && stall.depth == 2)
    // Spinning on the CPU.
    #expect(stall.threadState == "R")
    #expect(records.filter { $0.record == .recovery }.count == 1)
  }

  @Test(.enabled(if: journaldAvailable, "no journald could be started"))
  func stallsReachJournaldAsWarningsAndRecoveriesAsNotices() throws {
    let identifier = "runloop-stall-\(UInt32.random(in: 0...UInt32.max))"
    let run = "stall-\(UInt64.random(in: 1...UInt64.max))"
    let journal = try JournalSink(identifier: identifier)
    _ = try watched(threshold: .milliseconds(100), extraSinks: [journal], runID: run) { loop in
      loop.perform(name: "stuck") { usleep(300_000) }
      try loop.run(mode: .default, timeout: .milliseconds(400))
    }
    var entries: [[String: String]] = []
    #expect(
      eventually(10) {
        entries =
          (try? journalEntries(["RUNLOOP_RUN=\(run)", "MESSAGE_ID=\(JournalSink.MessageID.stall)"]))
          ?? []
        return !entries.isEmpty
      })
    let stall = try #require(entries.first)
    #expect(entries.count == 1)
    #expect(stall["PRIORITY"] == "4")
    #expect(stall["RUNLOOP_RECORD"] == "stall")
    #expect(stall["RUNLOOP_CALLOUT_NAME"] == "stuck")
    #expect(stall["RUNLOOP_THREAD_STATE"] == "S")
    #expect(stall["MESSAGE"]?.contains("STALLED") == true)
    let recoveries = try journalEntries([
      "RUNLOOP_RUN=\(run)", "MESSAGE_ID=\(JournalSink.MessageID.recovery)",
    ])
    #expect(recoveries.count == 1)
    #expect(recoveries.first?["PRIORITY"] == "5")
  }
}
