import Foundation
import RunLoopCore
import RunLoopJournal
import RunLoopTestSupport
import RunLoopTracing
import Testing

@Suite("Journal sink rate limit and field names")
struct JournalRateLimitTests {
  // Past the sink's own limit, records are dropped by the sink (journald would have dropped
  // them silently), counted, and reported in a drops entry.
  @Test func recordsOverTheRateLimitAreDroppedCountedAndReported() throws {
    let socket = DatagramSocket(path: temporaryPath("limited.sock"))
    // A bucket of 10 records, refilled at 10 per minute: the test sees no refill.
    let journal = try JournalSink(
      identifier: "runloop-limited", destination: .socket(path: socket.path),
      rateLimit: .init(burst: 20, interval: .seconds(60)))
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
    let record = TraceRecord(
      run: "limited", seq: 1, record: .activity, timestamp: 1, wallTime: 0, pid: 1, tid: 2,
      thread: "thread", loop: 1, mode: "default", iteration: 1, depth: 1, activity: "entry")
    for _ in 0..<30 { journal.enqueue(record) }
    #expect(journal.flush())
    journal.close()
    let statistics = journal.statistics
    #expect(statistics.rateLimited == 20)
    #expect(statistics.dropped == 20)
    #expect(eventually { datagrams.withLock { $0.count } >= Int(statistics.sent) })
    reading.withLock { $0 = false }
    let received = datagrams.withLock { $0 }
    let reports = received.filter { $0.contains("RUNLOOP_RECORD=drops\n") }
    #expect(received.count - reports.count == 10)
    func sum(_ field: String) -> UInt64 {
      reports.compactMap { report in
        report.split(separator: "\n").first { $0.hasPrefix("\(field)=") }
          .flatMap { UInt64($0.dropFirst(field.count + 1)) }
      }.reduce(0, +)
    }
    #expect(sum("RUNLOOP_DROPPED") == 20)
    #expect(sum("RUNLOOP_RATE_LIMITED") == 20)
  }

  // journald ignores fields with invalid names: the sink refuses them up front.
  @Test func invalidExtraFieldNamesAreRefused() throws {
    for name in ["lower", "_TRUSTED", "WITH-DASH", "7UP", "", String(repeating: "A", count: 65)] {
      #expect(throws: RunLoopError.self, "\(name)") {
        _ = try JournalSink(destination: .socket(path: "/nonexistent"), extraFields: [name: "1"])
      }
    }
    do {
      _ = try JournalSink(destination: .socket(path: "/nonexistent"), extraFields: ["bad": "1"])
      Issue.record("no error")
    } catch {
      #expect(error.code == .invalidArgument)
      #expect(error.message.contains("'bad'"))
    }
    let sink = try JournalSink(
      destination: .socket(path: "/nonexistent"), extraFields: ["RUNLOOP_TEST_2": "1"])
    sink.close()
  }
}
