import RunLoopTestSupport
import Testing

/// Which thread a loop is current on, where thread handles are reused: after its owner
/// exited, and in a forked child. Each runs in a helper process of its own, where no other
/// test's threads take the stacks glibc keeps for reuse, and where forking is safe.
@Suite("Whose loop is current")
struct LoopOwnershipTests {
  // glibc hands a joined thread's stack, and with it its handle, to the next new thread:
  // most of the ten threads get the exited owner's handle, and the loop is current on none.
  @Test func aLoopIsCurrentOnNoLaterThreadThatReusesItsExitedOwnersHandle() throws {
    let helper = try HelperProcess(["core-exited-owner"])
    let line = helper.readLine(timeout: .seconds(30)) ?? ""
    #expect(helper.waitForExit(timeout: .seconds(30)) == 0)
    let fields = Dictionary(
      uniqueKeysWithValues: line.split(separator: " ").compactMap { field in
        let parts = field.split(separator: "=")
        return parts.count == 2 ? (String(parts[0]), Int(parts[1]) ?? -1) : nil
      })
    #expect(fields["current"] == 0, "\(line)")
    // The case the test is about happened (otherwise it would pass for any answer).
    #expect((fields["reused"] ?? 0) > 0, "\(line)")
  }

  // In a forked child the forking thread is the only thread; its loop stays current there,
  // and the loop of another of the parent's threads is current nowhere.
  @Test func aForkedChildsOnlyThreadKeepsItsLoopAndNoOtherThreadsLoop() throws {
    let helper = try HelperProcess(["core-fork-current"])
    var lines: [String] = []
    while let line = helper.readLine(timeout: .seconds(30)) { lines.append(line) }
    #expect(helper.waitForExit(timeout: .seconds(30)) == 0)
    #expect(lines.contains("child: own=true other=false"), "\(lines)")
    #expect(lines.contains("parent: own=true other=false childExit=0"), "\(lines)")
  }

  // With no descriptor left, no loop can be made: makeCurrent() and RunLoopThread.start()
  // throw loopCreationFailed with EMFILE (24) instead of stopping the process. Once
  // descriptors are back, a thread's next try works; the main loop's failure stays.
  @Test func aLoopThatCannotGetItsDescriptorsIsAThrownErrorNotAStop() throws {
    let helper = try HelperProcess(["core-no-descriptors"])
    var lines: [String] = []
    while let line = helper.readLine(timeout: .seconds(30)) { lines.append(line) }
    #expect(helper.waitForExit(timeout: .seconds(30)) == 0)
    #expect(
      lines == [
        "main: loopCreationFailed errno=24",
        "thread: loopCreationFailed errno=24",
        "plain: loopCreationFailed errno=24",
        "plain again: ok",
        "thread again: ok",
        "main again: loopCreationFailed errno=24",
      ])
  }
}
