import Foundation
import RunLoopCore
import RunLoopJournal
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// An actor pinned to a loop (every job runs on the loop's thread).
private actor Traced {
  nonisolated let unownedExecutor: UnownedSerialExecutor
  private var count = 0
  init(_ loop: EventRunLoop) { unownedExecutor = loop.asUnownedSerialExecutor() }
  func bump() -> Int {
    count += 1
    return count
  }
}

@Suite("Tracing the jobs a loop runs as an executor")
struct JobTracingTests {
  @Test(.enabled(if: journaldAvailable, "no journald could be started"))
  func jobsAreCallOutsOfKindJobInTheJSONLogAndInJournald() async throws {
    let identifier = "runloop-jobs-\(UInt32.random(in: 0...UInt32.max))"
    let path = temporaryPath("jobs.jsonl")
    defer { unlink(path) }
    let journal = try JournalSink(identifier: identifier)
    let tracer = LoopTracer(sinks: [try JSONLinesSink(path: path), journal])
    let worker = try startLoopThread(name: "traced-actor") { tracer.attach(to: $0) }
    let actor = Traced(worker.runLoop)
    for _ in 0..<3 { _ = await actor.bump() }
    // The last job's record is made when it returns: a request after it flushes the order.
    try await worker.runLoop.submit {}
    stopLoopThread(worker)
    tracer.close()
    let jobs = try TraceLog.read(contentsOf: path).filter { $0.calloutKind == "job" }
    #expect(jobs.count == 3)
    #expect(jobs.allSatisfy { $0.calloutName?.hasPrefix("loop UnownedJob(id: ") == true })
    #expect(jobs.allSatisfy { $0.thread == "traced-actor" })
    var entries: [String] = []
    #expect(
      await eventuallyAsync(10) {
        _ = try? runProgram("/usr/bin/journalctl", ["--sync"])
        let result = try? runProgram(
          "/usr/bin/journalctl",
          ["-t", identifier, "RUNLOOP_CALLOUT_KIND=job", "-o", "cat", "--no-pager"])
        entries = result?.output.split(separator: "\n").map(String.init) ?? []
        return entries.count >= 3
      })
    #expect(entries.count == 3)
  }
}
