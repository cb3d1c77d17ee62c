import RunLoopCore
import RunLoopTestSupport
import Testing

/// `EventRunLoop.runMain`: an async body on the main loop from a synchronous main, and every
/// misuse of the main loop failing with an error that names that pattern, never a hang.
@Suite("Async code on the main loop")
struct RunMainTests {
  @Test func runMainRunsAnAsyncBodyOnTheMainLoopAndReturnsItsValue() throws {
    let helper = try HelperProcess(["core-run-main"])
    #expect(helper.readLine() == "body on the main thread: true")
    #expect(helper.readLine() == "submitted work served by the main loop")
    #expect(helper.readLine() == "main loop running: true")
    #expect(helper.readLine() == "value: 42")
    #expect(helper.readLine() == "rethrown: true")
    #expect(helper.waitForExit() == 0)
  }

  @Test func inAnAsyncMainTheMainLoopsCallsThrowAndNameRunMain() throws {
    let helper = try HelperProcess([], executable: "RunLoopAsyncMainHelper")
    var lines: [String] = []
    while let line = helper.readLine(timeout: .seconds(30)), line != "done" { lines.append(line) }
    #expect(lines.count == 3)
    for (line, call) in zip(lines, ["run: ", "submit: ", "runMain: "]) {
      #expect(line.hasPrefix(call + "notOwningThread"), "\(line)")
      #expect(line.contains("EventRunLoop.runMain"), "\(line)")
    }
    #expect(helper.waitForExit() == 0)
  }

  @Test func runMainOffTheMainThreadThrowsNotOwningThread() throws {
    let error = #expect(throws: RunLoopError.notOwningThread("")) {
      _ = try EventRunLoop.runMain { 1 }
    }
    #expect(error?.message.contains("keep main synchronous") == true)
  }
}
