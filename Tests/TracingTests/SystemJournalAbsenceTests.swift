import Foundation
import RunLoopCore
import RunLoopJournal
import RunLoopTestSupport
import RunLoopTracing
import Testing

/// The system-journal path (`sd_journal_sendv`) with no journald: measured in a child copy of
/// this test process, inside a private mount namespace whose /run/systemd/journal is an empty
/// tmpfs, so the real journald is never touched.
@Suite("The journald sink without a journal")
struct SystemJournalAbsenceTests {
  static let childVariable = "RUNLOOP_OBSERVERS_ABSENCE_CHILD"
  static let isChild = ProcessInfo.processInfo.environment[childVariable] == "1"

  /// Whether this machine lets us make a private mount namespace (root and unshare(1)).
  static let canIsolate: Bool = {
    guard !isChild, getuid() == 0, access("/usr/bin/unshare", X_OK) == 0 else {
      if !isChild { print("system-journal absence test skipped: needs root and unshare(1)") }
      return false
    }
    return true
  }()

  @Test(.enabled(if: canIsolate, "needs root and unshare(1) for a private mount namespace"))
  func missingOrDeadJournalIsReportedOnceAndTheLoopGoesOn() throws {
    let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let script =
      "mkdir -p /run/systemd/journal && mount -t tmpfs none /run/systemd/journal && "
      + "exec \"$0\" --testing-library swift-testing "
      + "--filter 'SystemJournalAbsenceTests/childTracesWithoutAJournal'"
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
    process.arguments = [
      "--mount", "--propagation", "private", "/bin/sh", "-c", script, executable,
    ]
    process.environment = ProcessInfo.processInfo.environment.merging([Self.childVariable: "1"]) {
      $1
    }
    // One pipe for both streams: swift-testing reports on standard error, like the sink.
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    let ended = ProcessExitSignal(process)
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let text = String(decoding: data, as: UTF8.self)
    try #require(ended.waitOrKill(process, timeout: .seconds(120)), "child never ended:\n\(text)")
    #expect(process.terminationStatus == 0, "child failed:\n\(text)")
    #expect(text.contains("childTracesWithoutAJournal() passed"))
    // One report per sink: one for the missing socket, one for the dead one.
    let reports = text.split(separator: "\n").filter { $0.contains("no journal answers") }
    #expect(reports.count == 2)
    #expect(reports.first?.contains("No such file or directory") == true)
    #expect(reports.last?.contains("Connection refused") == true)
  }

  /// Runs only in the child, inside the private mount namespace.
  @Test(.enabled(if: isChild, "runs only in the child process of the test above"))
  func childTracesWithoutAJournal() throws {
    // 1. No socket file at all (libsystemd alone would report success and lose the entries).
    let missing = try JournalSink(identifier: "runloop-absent-child")
    try traceBurst(into: missing, passes: 50)
    #expect(missing.flush())
    let missingStats = missing.statistics
    missing.close()
    #expect(missingStats.journalAbsent)
    #expect(missingStats.lastError == ENOENT)
    #expect(missingStats.failed == 250)
    #expect(missingStats.sent == 0)
    // 2. A socket file nobody listens on: sd_journal_sendv returns -ECONNREFUSED.
    let dead = DatagramSocket(path: "/run/systemd/journal/socket")
    dead.close()
    let refused = try JournalSink(identifier: "runloop-absent-child")
    try traceBurst(into: refused, passes: 50)
    #expect(refused.flush())
    let refusedStats = refused.statistics
    refused.close()
    #expect(refusedStats.journalAbsent)
    #expect(refusedStats.lastError == ECONNREFUSED)
    #expect(refusedStats.failed == 250)
    #expect(refusedStats.absenceReports == 1)
  }

  private func traceBurst(into sink: JournalSink, passes: Int) throws {
    let tracer = LoopTracer(sinks: [sink])
    let completed = try onNewThread("absent-journal") { loop -> Int in
      let source = CustomInputSource(name: "burst") {}
      try loop.add(source, mode: .default)
      tracer.attach(to: loop)
      var completed = 0
      for _ in 0..<passes {
        source.signal()
        if try loop.run(mode: .default, timeout: .zero) == .timedOut { completed += 1 }
      }
      tracer.detach()
      return completed
    }
    // The loop went on: every run ran to its end.
    #expect(completed == passes)
  }
}
