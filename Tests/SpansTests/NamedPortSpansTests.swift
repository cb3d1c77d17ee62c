import Glibc
import InMemoryTracing
import RunLoopCore
import RunLoopPorts
import RunLoopSpans
import RunLoopTestSupport
import Testing
import Tracing

/// A named-port request from another process: the frame's W3C trace context, written and
/// read through the bootstrapped instrument, makes the server's handler span a child of the
/// client's sending span, and the client's reply span a child of the handler's.
@Suite(.serialized)
struct NamedPortSpansTests {
  @Test func aRequestFromAnotherProcessRunsAsAChildOfTheSendersSpanAndItsReplyOfTheHandlers()
    throws
  {
    let recorder = testTracer.recorder
    let directory = try Self.temporaryDirectory()
    defer { Self.remove(directory) }
    let registry = try PortNameRegistry(directory: directory)
    let server = try NamedPortServer(name: "spans-traced", registry: registry) { $0.data }
    let spans = LoopSpans()
    let thread = try startLoopThread(name: "spans-server") { loop in
      loop.addInstrument(spans)
      try server.add(to: loop, mode: .default)
    }
    let helper = try HelperProcess(["spans-traced-request", directory, "spans-traced"])
    var client: [String: [String: String]] = [:]
    while let line = helper.readLine(), line != "done" {
      let fields = Dictionary(
        uniqueKeysWithValues: line.split(separator: " ").map { field in
          let parts = field.split(separator: ":", maxSplits: 1)
          return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        })
      client[fields["span"] ?? line] = fields
    }
    #expect(helper.waitForExit() == 0)
    stopLoopThread(thread)
    server.invalidate()

    let request = try #require(client["client-request"])
    let send = try #require(client["send"])
    let reply = try #require(client["spans-traced.reply"])
    #expect(request["parent"] == "none")
    #expect(send["parent"] == request["id"])
    let handlers = recorder.finishedSpans.filter { $0.operationName == "spans-traced.request" }
    #expect(handlers.count == 1)
    let handler = try #require(handlers.first)
    #expect(handler.traceID == request["trace"])
    #expect(handler.parentSpanID == send["id"])
    #expect(reply["trace"] == request["trace"])
    #expect(reply["parent"] == handler.spanID)
  }

  static func temporaryDirectory() throws -> String {
    var template = Array("/tmp/rls-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else {
      throw RunLoopError.systemCall("mkdtemp", errno: errno)
    }
    return String(cString: made)
  }

  /// Removes the registry's directory and the names in it (no subdirectories).
  static func remove(_ directory: String) {
    guard let handle = opendir(directory) else { return }
    while let entry = readdir(handle) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name != "." && name != ".." { unlink(directory + "/" + name) }
    }
    closedir(handle)
    rmdir(directory)
  }
}
