import Foundation
import Testing

/// `trace export A.jsonl B.jsonl`: the logs of two processes as one picture, with the
/// arrows of a named-port request crossing from the client to the server and of its reply
/// coming back.
@Suite("runloop-demo trace export across processes")
struct CrossProcessExportTests {
  @Test func namedPortRequestIsDrawnFromTheClientsCalloutToTheServersHandlerAndBack() throws {
    let directory = try scratchDirectory("cross-process")
    let serverLog = directory + "/np.jsonl"
    let clientLog = directory + "/np.client.jsonl"
    let scenario = try runDemo(["scenario", "named-ports", "--json-log", serverLog])
    #expect(scenario.status == 0, "\(scenario.stdout)\(scenario.stderr)")
    #expect(FileManager.default.fileExists(atPath: clientLog), "\(scenario.stdout)")
    let out = directory + "/both.json"
    let export = try runDemo(["trace", "export", serverLog, clientLog, "-o", out])
    #expect(export.status == 0, "\(export.stderr)")
    #expect(export.stdout.contains("from 2 logs"), "\(export.stdout)")

    let document = try JSONSerialization.jsonObject(
      with: Data(contentsOf: URL(fileURLWithPath: out)))
    let events = try #require((document as? [String: Any])?["traceEvents"] as? [[String: Any]])
    func slice(_ name: String) throws -> [String: Any] {
      let matches = events.filter { $0["ph"] as? String == "X" && $0["name"] as? String == name }
      #expect(matches.count == 1, "\(name): \(matches.count) slices")
      return try #require(matches.first)
    }
    let send = try slice("block: send")
    let message = try slice("port: demo.main.message")
    let handler = try slice("port: demo.main.request")
    let reply = try slice("port: demo.main.reply")
    let clientPID = try #require(send["pid"] as? Int)
    let serverPID = try #require(handler["pid"] as? Int)
    #expect(clientPID != serverPID)
    #expect(reply["pid"] as? Int == clientPID && message["pid"] as? Int == serverPID)
    // One process track per log, named after it.
    let processNames = events.filter { $0["name"] as? String == "process_name" }
      .compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
    #expect(
      Set(processNames) == ["pid \(serverPID): np.jsonl", "pid \(clientPID): np.client.jsonl"])

    // A flow is an `s` at its cause's slice and an `f` (bound to the enclosing slice) at its
    // effect's, with the same id.
    let starts = events.filter { $0["ph"] as? String == "s" }
    let finishes = events.filter { $0["ph"] as? String == "f" }
    func arrow(from cause: [String: Any], to effect: [String: Any]) -> Bool {
      starts.contains { start in
        Self.at(start, cause)
          && finishes.contains { $0["id"] as? Int == start["id"] as? Int && Self.at($0, effect) }
      }
    }
    #expect(arrow(from: send, to: message), "the one-way message from the client's call-out")
    #expect(arrow(from: send, to: handler), "the request from the client's call-out")
    #expect(arrow(from: handler, to: reply), "the reply from the server's handler")
    #expect(finishes.allSatisfy { $0["bp"] as? String == "e" })
    #expect(export.stdout.contains("cause arrows"), "\(export.stdout)")
  }

  @Test func aMissingLogAmongSeveralIsNamedAndNothingIsWritten() throws {
    let directory = try scratchDirectory("cross-process-missing")
    let log = directory + "/one.jsonl"
    try
      (#"{"v":2,"run":"r","seq":1,"record":"activity","ts_ns":1,"wall_ns":1,"pid":1,"tid":1,"#
      + #""thread":"t","loop":1,"mode":"default","iteration":0,"depth":1,"activity":"entry"}"#
      + "\n").write(toFile: log, atomically: false, encoding: .utf8)
    let out = directory + "/out.json"
    let result = try runDemo(["trace", "export", log, directory + "/gone.jsonl", "-o", out])
    #expect(result.status == 1)
    #expect(
      result.stderr.contains("cannot read '\(directory)/gone.jsonl': No such file or directory"),
      "\(result.stderr)")
    #expect(!FileManager.default.fileExists(atPath: out))
  }

  /// Whether a flow event binds to `slice`: same process and thread, inside its time.
  static func at(_ event: [String: Any], _ slice: [String: Any]) -> Bool {
    guard let time = event["ts"] as? Double, let start = slice["ts"] as? Double,
      let length = slice["dur"] as? Double
    else { return false }
    return event["pid"] as? Int == slice["pid"] as? Int
      && event["tid"] as? Int == slice["tid"] as? Int && start <= time && time <= start + length
  }
}
