import Foundation
import Glibc
import Testing

/// journald's `MESSAGE_ID` for "Suppressed N messages from UNIT" (SD_MESSAGE_JOURNAL_DROPPED),
/// which it writes when the first entry of the next rate-limit window arrives.
private let journaldDroppedMessageID = "a596d6fe7bfa4994828e72309e95d61e"

private let canRunPrivateJournald =
  PrivateJournald.canStart && UnitCGroup.root != nil && access("/usr/bin/journalctl", X_OK) == 0
  && access("/usr/bin/python3", X_OK) == 0

/// The demo, in `unit`'s cgroup, tracing to `journald` with `budget` as its
/// `--journal-rate-limit`, for 2 s with two workers.
private func runDemoCharged(
  to unit: UnitCGroup, journald: PrivateJournald, budget: String, identifier: String,
  directory: String
) throws -> DemoResult {
  let arguments = [
    demoBinary, "run", "--workers", "2", "--duration", "2", "--identifier", identifier,
    "--journal-socket", journald.socketPath, "--journal-rate-limit", budget,
  ]
  return try DemoProcess(unit.command(arguments), executable: "/bin/sh", directory: directory)
    .wait(timeout: .seconds(40))
}

/// The sum of the integer `field` over `entries`.
private func sum(_ field: String, of entries: [[String: String]]) -> Int {
  entries.compactMap { $0[field].flatMap { Int($0) } }.reduce(0, +)
}

/// The demo's heartbeat lines: each is also one log line to journald.
private func heartbeats(in stdout: String) -> Int {
  stdout.split(separator: "\n").filter { $0.contains(" heartbeat ") }.count
}

@Suite("journald's rate limit, against a journald of the test's own")
struct JournaldRateLimitTests {
  // The demo keeps to the budget journald is configured with: what is over it is dropped,
  // counted and reported by the demo, and journald keeps every entry it is sent.
  @Test(.enabled(if: canRunPrivateJournald, "needs root, journald, journalctl, python3, cgroup v2"))
  func withinJournaldsBudgetTheDemoCountsAndReportsEveryDropAndJournaldDropsNone() throws {
    let journald = try PrivateJournald(settings: [
      "Storage=volatile", "RateLimitIntervalSec=1h", "RateLimitBurst=300",
    ])
    defer { journald.terminate() }
    let unit = try UnitCGroup("runloop-budget")
    defer { unit.remove() }
    let directory = try scratchDirectory("journal-budget")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let identifier = "runloop-budget-\(UInt32.random(in: 0...UInt32.max))"

    let run = try runDemoCharged(
      to: unit, journald: journald, budget: "300/1h", identifier: identifier,
      directory: directory)
    #expect(run.status == 0, "\(run.stderr)")
    // The loops ran on to the end while the journal was cut off: the JSON log is complete.
    let log = try LogCheck(path: directory + "/runloop-trace.jsonl")
    #expect(log.problems().isEmpty, "\(log.problems())")
    let missedLine = try #require(
      run.stderr.split(separator: "\n").first { $0.contains("journald missed") }, "\(run.stderr)")
    let missed = try #require(
      missedLine.split(separator: " ").lazy.compactMap { Int($0) }.first, "\(missedLine)")

    _ = try runProgram("/usr/bin/journalctl", ["--namespace=\(journald.namespace)", "--sync"])
    let entries = try journald.entries()
    let ours = entries.filter { $0["SYSLOG_IDENTIFIER"] == identifier }
    let reports = ours.filter { $0["RUNLOOP_RECORD"] == "drops" }
    let records = ours.filter { $0["RUNLOOP_RECORD"] != nil && $0["RUNLOOP_RECORD"] != "drops" }
    // Every trace record is in journald or counted as dropped; every drop is over the limit
    // (none for a full queue) and in the drop reports journald got.
    #expect(missed > 0)
    #expect(records.count + missed == log.records.count)
    #expect(records.count <= 300)
    #expect(sum("RUNLOOP_DROPPED", of: reports) == missed)
    #expect(sum("RUNLOOP_RATE_LIMITED", of: reports) == missed)
    // The service's log lines all arrived, and journald suppressed nothing.
    let lines = ours.filter { $0["RUNLOOP_RECORD"] == nil }
    #expect(lines.count == heartbeats(in: run.stdout))
    #expect(heartbeats(in: run.stdout) > 0)
    #expect(!entries.contains { $0["MESSAGE_ID"] == journaldDroppedMessageID })
  }

  // With the demo's own limit off, journald drops what is over its budget and says so only in
  // its own journal: what it kept plus what it says it suppressed is everything the demo sent.
  @Test(.enabled(if: canRunPrivateJournald, "needs root, journald, journalctl, python3, cgroup v2"))
  func overJournaldsBudgetWhatJournaldKeptAndSaysItSuppressedIsEverythingSent() throws {
    let journald = try PrivateJournald(settings: [
      "Storage=volatile", "RateLimitIntervalSec=1s", "RateLimitBurst=20",
    ])
    defer { journald.terminate() }
    let unit = try UnitCGroup("runloop-over")
    defer { unit.remove() }
    let directory = try scratchDirectory("journal-over")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let identifier = "runloop-over-\(UInt32.random(in: 0...UInt32.max))"

    let run = try runDemoCharged(
      to: unit, journald: journald, budget: "none", identifier: identifier, directory: directory)
    #expect(run.status == 0, "\(run.stderr)")
    let log = try LogCheck(path: directory + "/runloop-trace.jsonl")
    #expect(log.problems().isEmpty, "\(log.problems())")
    // The demo saw no loss: journald's drops are silent to the sender.
    #expect(!run.stderr.contains("journald missed"), "\(run.stderr)")

    // journald reports a window's suppressed entries when the unit's next entry arrives in a
    // later window, and it keeps one window per priority: once the last window is over, one
    // more entry of each priority, from the same unit.
    usleep(2_000_000)
    let send = try runProgram(
      "/bin/sh",
      unit.command([
        "/usr/bin/python3", "-c",
        "import socket,sys; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
          + "s.connect(sys.argv[1]); "
          + "[s.send(b'MESSAGE=trailer\\nSYSLOG_IDENTIFIER=runloop-trailer\\nPRIORITY=%d\\n' % p) "
          + "for p in range(8)]",
        journald.socketPath,
      ]))
    #expect(send.status == 0, "\(send.output)")

    _ = try runProgram("/usr/bin/journalctl", ["--namespace=\(journald.namespace)", "--sync"])
    let entries = try journald.entries()
    #expect(entries.filter { $0["SYSLOG_IDENTIFIER"] == "runloop-trailer" }.count == 8)
    let kept = entries.filter { $0["SYSLOG_IDENTIFIER"] == identifier }
    let suppressed = entries.filter {
      $0["MESSAGE_ID"] == journaldDroppedMessageID && $0["OBJECT_SYSTEMD_UNIT"] == unit.unit
    }
    let dropped = sum("N_DROPPED", of: suppressed)
    #expect(dropped > 0)
    // Sent: every trace record of the JSON log, and one log line per heartbeat.
    #expect(kept.count + dropped == log.records.count + heartbeats(in: run.stdout))
  }
}
