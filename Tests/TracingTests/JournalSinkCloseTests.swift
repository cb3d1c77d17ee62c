import Foundation
import RunLoopCore
import RunLoopJournal
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// Closing journald sinks while journald is stopped: a journald of the test's own, never
/// the machine's.
@Suite("Closing the journald sink")
struct JournalSinkCloseTests {
  private func trace(_ tracer: LoopTracer, passes: Int) throws {
    try onNewThread("journal-close") { loop in
      let source = CustomInputSource(name: "burst") {}
      try loop.add(source, mode: .default)
      tracer.attach(to: loop)
      for _ in 0..<passes {
        source.signal()
        try loop.run(mode: .default, timeout: .zero)
      }
      tracer.detach()
    }
  }

  // journald stopped: the close returns at its bound, says it did not finish and counts
  // every entry it left behind; once journald runs again the writer delivers them, and
  // nothing was lost or counted twice.
  @Test(.enabled(if: PrivateJournald.canStart, "needs root and systemd-journald"))
  func aCloseThatTimesOutCountsWhatItLeavesBehind() throws {
    let journald = try PrivateJournald()
    defer { journald.terminate() }
    let identifier = "runloop-close-\(UInt32.random(in: 0...UInt32.max))"
    let sink = try JournalSink(
      identifier: identifier, destination: .socket(path: journald.socketPath), capacity: 10_000,
      rateLimit: nil)
    let tracer = LoopTracer(sinks: [sink])
    try #require(journald.stop(), "the private journald did not stop")
    let passes = 100
    do {
      defer { journald.resume() }
      try trace(tracer, passes: passes)
      let start = ContinuousClock.now
      #expect(!tracer.close(timeout: .milliseconds(500)))
      #expect(ContinuousClock.now - start < .seconds(3))
      let left = sink.statistics
      #expect(left.dropped == 0 && left.failed == 0)
      #expect(left.unsent > 0)
      #expect(left.sent + left.unsent == UInt64(passes * 5))
    }
    // journald runs again: what the close left behind is delivered after all.
    #expect(eventually(10) { sink.statistics.unsent == 0 })
    #expect(sink.close(timeout: .seconds(5)))
    #expect(sink.statistics.sent == UInt64(passes * 5))
    var entries: [[String: String]] = []
    #expect(
      eventually(10) {
        entries = (try? journald.entries(identifier: identifier)) ?? []
        return entries.count >= passes * 5
      })
    #expect(entries.count == passes * 5)
  }

  // Many sinks, one bound: closing five sinks of a stopped journald with one deadline takes
  // about that deadline, not five of them.
  @Test(.enabled(if: PrivateJournald.canStart, "needs root and systemd-journald"))
  func sinksClosedWithOneDeadlineShareIt() throws {
    let journald = try PrivateJournald()
    defer { journald.terminate() }
    let sinks = try (0..<5).map { index in
      try JournalSink(
        identifier: "runloop-deadline-\(index)", destination: .socket(path: journald.socketPath),
        rateLimit: nil)
    }
    let tracer = LoopTracer(sinks: sinks)
    try #require(journald.stop(), "the private journald did not stop")
    defer { journald.resume() }
    try trace(tracer, passes: 20)
    let start = ContinuousClock.now
    #expect(!tracer.close(timeout: .seconds(1)))
    let elapsed = ContinuousClock.now - start
    // Five sinks waiting 1 s each in turn would take 5 s.
    #expect(elapsed < .seconds(3), "closing took \(elapsed)")
    #expect(sinks.contains { $0.statistics.unsent > 0 })
    for sink in sinks {
      let statistics = sink.statistics
      #expect(statistics.sent + statistics.unsent + statistics.dropped == 100)
    }
  }
}
