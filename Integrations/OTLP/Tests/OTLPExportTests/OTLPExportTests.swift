import Foundation
import Testing

/// The demo's request path, exported by swift-otel over OTLP/HTTP to a receiver built on the
/// official protocol definitions (receiver/otlp_receiver.py): the receiver decodes every
/// export, and the spans it decoded form one trace from the request through the perform,
/// the actor job and the named-port request into the server process.
struct OTLPExportTests {
  @Test func theRequestPathReachesTheReceiverAsOneTraceAcrossBothProcesses() throws {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("runloop-otlp-test-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let portFile = directory.appendingPathComponent("port").path
    let spansFile = directory.appendingPathComponent("spans.jsonl").path

    // Output goes to files, never to pipes: nothing here waits for a child to close a pipe.
    let receiver = try start(
      Self.python, [Self.package + "/receiver/otlp_receiver.py", portFile, spansFile],
      output: directory.appendingPathComponent("receiver.log").path)
    defer { stop(receiver) }
    let port = try #require(waitForFile(portFile, process: receiver))
    let demo = try start(
      Self.productDirectory + "/runloop-demo-otlp", ["http://127.0.0.1:\(port)/v1/traces"],
      output: directory.appendingPathComponent("demo.log").path)
    defer { stop(demo) }
    #expect(waitForExit(demo, within: .seconds(60)) == 0)

    let spans = try String(contentsOfFile: spansFile, encoding: .utf8)
      .split(separator: "\n")
      .map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
    #expect(!spans.contains { $0["error"] != nil })
    func only(_ name: String) throws -> [String: Any] {
      let named = spans.filter { $0["name"] as? String == name }
      #expect(named.count == 1, "\(name): \(named.count) spans")
      return try #require(named.first, "\(name)")
    }
    let request = try only("demo.request")
    let perform = try only("demo.perform")
    // The task's jobs on the worker loop: its start (queued inside the perform), its hop to
    // the actor (which makes the named-port request), and its resumption after the reply;
    // each a child of the one before.
    let jobs = spans.filter {
      ($0["attributes"] as? [String: Any])?["runloop.callout.kind"] as? String == "job"
    }
    #expect(jobs.count == 3)
    let handler = try only("warehouse.request")
    let reply = try only("warehouse.reply")
    let trace = try #require(request["trace_id"] as? String)
    #expect(request["parent_span_id"] as? String == "")
    #expect(perform["parent_span_id"] as? String == request["span_id"] as? String)
    let jobIDs = jobs.compactMap { $0["span_id"] as? String }
    let first = try #require(
      jobs.first { $0["parent_span_id"] as? String == perform["span_id"] as? String })
    #expect(jobs.filter { jobIDs.contains($0["parent_span_id"] as? String ?? "") }.count == 2)
    // The server process's span is parented through the frame's traceparent, on the job
    // that made the request (the actor's, the child of the task's first job).
    let actorJob = try #require(
      jobs.first { $0["parent_span_id"] as? String == first["span_id"] as? String })
    #expect(handler["parent_span_id"] as? String == actorJob["span_id"] as? String)
    #expect(reply["parent_span_id"] as? String == handler["span_id"] as? String)
    for span in [perform, handler, reply] + jobs {
      #expect(span["trace_id"] as? String == trace)
    }
    #expect(request["service"] as? String == "runloop-demo")
    #expect(handler["service"] as? String == "runloop-demo-warehouse")
    let attributes = try #require(perform["attributes"] as? [String: Any])
    #expect(attributes["runloop.callout.kind"] as? String == "block")
    #expect(attributes["runloop.mode"] as? String == "default")
    #expect(attributes["runloop.depth"] as? Int == 1)
    for key in ["runloop.loop", "thread.id", "runloop.iteration", "runloop.step"] {
      #expect(attributes[key] != nil, "\(key)")
    }
    #expect((handler["attributes"] as? [String: Any])?["runloop.callout.kind"] != nil)
  }

  /// This package's directory.
  static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path

  /// The venv scripts/ensure-deps.sh makes, or OTLP_RECEIVER_PYTHON.
  static let python =
    ProcessInfo.processInfo.environment["OTLP_RECEIVER_PYTHON"]
    ?? NSHomeDirectory() + "/.cache/swift-runloop/otlp-venv/bin/python"

  /// Where the built products are: beside the running test binary.
  static let productDirectory = URL(
    fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
      ?? CommandLine.arguments[0]
  ).deletingLastPathComponent().path
}

private func start(_ executable: String, _ arguments: [String], output: String) throws -> Process {
  FileManager.default.createFile(atPath: output, contents: nil)
  let log = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
  let process = Process()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  process.standardInput = FileHandle.nullDevice
  process.standardOutput = log
  process.standardError = log
  try process.run()
  return process
}

/// The file's contents once it exists, for up to ten seconds or until the process exits.
private func waitForFile(_ path: String, process: Process) -> String? {
  let deadline = ContinuousClock.now + .seconds(10)
  while ContinuousClock.now < deadline && process.isRunning {
    if let text = try? String(contentsOfFile: path, encoding: .utf8) { return text }
    usleep(10_000)
  }
  return nil
}

/// The exit status, or nil when the process is still running at the deadline (then killed).
private func waitForExit(_ process: Process, within limit: Duration) -> Int32? {
  let deadline = ContinuousClock.now + limit
  while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
  if process.isRunning { return nil }
  return process.terminationStatus
}

/// Ends a child that is still running. SIGKILL, not SIGTERM: a child started from the test
/// process inherits its signal mask, in which SIGTERM is blocked, and would never see it.
private func stop(_ process: Process) {
  guard process.isRunning else { return }
  kill(process.processIdentifier, SIGKILL)
  process.waitUntilExit()
}
