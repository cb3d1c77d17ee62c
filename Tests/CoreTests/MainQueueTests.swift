import RunLoopCore
import RunLoopTestSupport
import Testing

@Suite("The main run loop and Dispatch")
struct MainQueueTests {
  // Runs in a separate process: the test runner owns this process's main thread.
  @Test func mainLoopDrainsTheMainQueueInCommonModesOnly() throws {
    let helper = try HelperProcess(["core-main-queue"])
    let privateLine = helper.readLine(timeout: .seconds(30))
    #expect(privateLine == "private-mode:timedOut:ran=false")
    var lines: [String] = []
    while let line = helper.readLine(timeout: .seconds(30)) {
      lines.append(line)
      if line.hasPrefix("done:") { break }
    }
    #expect(lines.last == "done:from-global,held-block,main-actor")
    #expect(helper.waitForExit(timeout: .seconds(30)) == 0)
  }

  // As in CFRunLoop, a run nested in main-queue work does not serve the main queue: it
  // neither claims a handled source nor skips its sleep for the queue's readiness.
  @Test func runNestedInMainQueueWorkSleepsPastTheMainQueue() throws {
    let helper = try HelperProcess(["core-main-queue-nested-run"])
    #expect(helper.readLine(timeout: .seconds(30)) == "order:nested:timedOut,B")
    #expect(helper.waitForExit(timeout: .seconds(30)) == 0)
  }

  @Test func mainQueueBlocksDoNotRunInsideAnotherMainQueueBlock() throws {
    let helper = try HelperProcess(["core-main-queue-nested"])
    #expect(helper.readLine(timeout: .seconds(30)) == "order:A-start,A-end,B")
    #expect(helper.waitForExit(timeout: .seconds(30)) == 0)
  }
}
