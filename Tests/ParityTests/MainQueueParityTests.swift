import Foundation
import Testing

/// The main dispatch queue on the main thread's loop, run in a helper process (the test
/// runner owns this process's main thread).
@Suite("Parity: the main queue")
struct MainQueueParityTests {
  /// The helper's trace for one side.
  static func trace(_ side: String) throws -> [String] {
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var directory = executable.deletingLastPathComponent()
    while !FileManager.default.isExecutableFile(
      atPath: directory.appendingPathComponent("RunLoopParityHelper").path)
    {
      guard directory.pathComponents.count > 1 else { return ["helper not found"] }
      directory.deleteLastPathComponent()
    }
    let process = Process()
    process.executableURL = directory.appendingPathComponent("RunLoopParityHelper")
    process.arguments = [side]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
  }

  @Test func mainQueueDrainsOnlyInCommonModesAndNeverInsideMainQueueWork() throws {
    let cf = try Self.trace("cf")
    let ours = try Self.trace("ours")
    let pass = ["beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting"]
    #expect(
      cf == ["entry"] + pass + ["exit", "result:timedOut"]
        // A common mode drains it; draining counts as a handled source. A run nested in that
        // work does not drain the main queue (the block queued meanwhile): it sleeps until
        // its timeout, as if the main queue were not there.
        + ["entry"] + pass + ["block:held"] + ["entry"] + pass + ["exit", "nested:timedOut"]
        + ["exit", "result:handledSource"]
        // CF's first pass of a run never looks at the main queue before it sleeps.
        + ["entry"] + pass + ["block:queued-by-held", "exit", "result:handledSource"])
    #expect(
      ours == ["entry"] + pass
        // Difference: one epoll set serves every mode, so main-queue work that arrives while
        // the loop runs another mode wakes it once; the loop then holds that descriptor out
        // of the set until a run in a common mode.
        + pass + ["exit", "result:timedOut"]
        // Difference: step 5 finds the main queue ready on the first pass (the guide's step 5
        // looks at every ready port), so no sleep comes first.
        + ["entry", "beforeTimers", "beforeSources", "block:held"] + ["entry"] + pass
        + ["exit", "nested:timedOut", "exit", "result:handledSource"]
        + ["entry", "beforeTimers", "beforeSources", "block:queued-by-held", "exit"]
        + ["result:handledSource"])
  }
}
