import Foundation
import Glibc
import RunLoopTracing
import Testing

private let journalRemote = "/lib/systemd/systemd-journal-remote"
private let journalUpload = "/lib/systemd/systemd-journal-upload"
private let shippingAvailable =
  journaldAvailable && access(journalRemote, X_OK) == 0 && access(journalUpload, X_OK) == 0

/// A TCP port on 127.0.0.1 that nobody listened on a moment ago.
private func freeLoopbackPort() throws -> UInt16 {
  let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  try #require(descriptor >= 0)
  defer { close(descriptor) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  address.sin_port = 0
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
    }
  }
  try #require(bound)
  return UInt16(bigEndian: address.sin_port)
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
private func accepts(port: UInt16) -> Bool {
  let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard descriptor >= 0 else { return false }
  defer { close(descriptor) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  address.sin_port = port.bigEndian
  return withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
    }
  }
}

@Suite("Traces leave the machine through journald's own shipping")
struct JournalShippingTests {
  @Test(.enabled(if: shippingAvailable, "no journald, or systemd-journal-remote not installed"))
  func aDemoRunsRecordsArriveOneForOneInARemoteJournalThroughJournalUpload() throws {
    let directory = try scratchDirectory("shipping")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let remoteDirectory = directory + "/remote"
    try FileManager.default.createDirectory(
      atPath: remoteDirectory, withIntermediateDirectories: true)
    // Upload only what follows the journal's latest entry now.
    _ = try runProgram("/usr/bin/journalctl", ["--sync"])
    let last = try runProgram("/usr/bin/journalctl", ["-n", "1", "-o", "export", "--no-pager"])
    let cursor = last.output.split(separator: "\n").first { $0.hasPrefix("__CURSOR=") }
      .map { String($0.dropFirst("__CURSOR=".count)) }

    let identifier = "runloop-shipping-\(UInt32.random(in: 0...UInt32.max))"
    let run = try runDemo(
      ["run", "--workers", "1", "--duration", "1", "--identifier", identifier],
      directory: directory)
    #expect(run.status == 0, "\(run.stderr)")
    let records = try TraceLog.read(contentsOf: directory + "/runloop-trace.jsonl")
    let runID = try #require(records.first?.run)
    _ = try runProgram("/usr/bin/journalctl", ["--sync"])

    // The receiving side: systemd-journal-remote on loopback, writing one journal file.
    let port = try freeLoopbackPort()
    let remote = try DemoProcess(
      [
        "--listen-http=127.0.0.1:\(port)", "--output=\(remoteDirectory)/uploaded.journal",
        "--split-mode=none",
      ], executable: journalRemote)
    defer { if remote.process.isRunning { remote.send(SIGKILL) } }
    #expect(eventually(10) { accepts(port: port) })
    // The sending side: systemd-journal-upload reads the local journal from the cursor to its
    // end and posts it over HTTP.
    var arguments = [
      "--url=http://127.0.0.1:\(port)", "--save-state=\(directory)/upload-state", "--follow=no",
    ]
    if let cursor { arguments.append("--after-cursor=\(cursor)") }
    let upload = try runProgram(journalUpload, arguments)
    #expect(upload.status == 0)
    remote.send(SIGTERM)
    let remoteEnd = remote.wait(timeout: .seconds(10))
    #expect(remoteEnd.status == 0, "\(remoteEnd.stderr)")

    let shipped = try runProgram(
      "/usr/bin/journalctl",
      ["-D", remoteDirectory, "RUNLOOP_RUN=\(runID)", "-o", "json", "--no-pager"])
    let all = try shipped.output.split(separator: "\n").map { line -> [String: String] in
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      return (object ?? [:]).compactMapValues { $0 as? String }
    }
    // The trace records, and the service's own log lines of the same run (heartbeats).
    let entries = all.filter { $0["RUNLOOP_RECORD"] != nil }
    let logLines = all.filter { $0["RUNLOOP_RECORD"] == nil }
    #expect(!records.isEmpty)
    #expect(entries.count == records.count)
    #expect(!logLines.isEmpty)
    #expect(
      logLines.allSatisfy {
        $0["SWIFT_LOG_LABEL"] == "runloop-demo.service" && $0["RUNLOOP_CALLOUT_NAME"] == "heartbeat"
      })
    // One for one: every record's fields, exactly, in one entry of the remote journal.
    let bySequence = Dictionary(entries.map { ($0["RUNLOOP_SEQ"] ?? "", $0) }) { first, _ in first }
    for record in records {
      let entry = try #require(bySequence[String(record.seq)], "no entry for seq \(record.seq)")
      let fields = entry.filter { $0.key.hasPrefix("RUNLOOP_") }
      let expected = Dictionary(
        uniqueKeysWithValues: record.fields.map { ("RUNLOOP_" + $0.key.uppercased(), $0.value) })
      #expect(fields == expected)
      #expect(entry["SYSLOG_IDENTIFIER"] == identifier)
    }
  }
}
