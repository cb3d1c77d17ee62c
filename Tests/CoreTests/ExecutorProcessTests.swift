import Glibc
import RunLoopCore
import RunLoopTestSupport
import Testing

/// The executor behaviours that stop a process or need its main thread, each in a child
/// process (`RunLoopTestHelper executor-...`, Tests/Helper/ExecutorHelper.swift).
@Suite("Loops as executors, in a child process")
struct ExecutorProcessTests {
  /// The Swift backtracer off: the process then stops on the fatal error's trap at once
  /// (exit 128 + SIGILL), instead of after a backtrace that a loaded machine can cut short.
  private static let noBacktrace = ["SWIFT_BACKTRACE=enable=no"]

  /// Lines up to the first that starts with `prefix` (inclusive), or all if none does.
  private func lines(of helper: HelperProcess, through prefix: String) -> [String] {
    var lines: [String] = []
    while let line = helper.readLine(timeout: .seconds(30)) {
      lines.append(line)
      if line.hasPrefix(prefix) { break }
    }
    return lines
  }

  @Test func preconditionIsolatedPassesOnTheLoopsThreadAndStopsElsewhereNamingTheLoop() throws {
    let helper = try HelperProcess(["executor-isolation-failure"], environment: Self.noBacktrace)
    let output = lines(of: helper, through: "RunLoopCore/")
    #expect(output.prefix(2) == ["on-loop-thread:ok", "checking-off-loop"])
    let message = output.last ?? ""
    #expect(message.contains("Fatal error: expected to run on the thread of EventRunLoop(id:"))
    #expect(message.contains("but running on thread"))
    #expect(!output.contains("not-reached"))
    #expect(helper.waitForExit(timeout: .seconds(30)) == 128 + SIGILL)
  }

  @Test func aJobForALoopWhoseThreadExitedStopsTheProcessNamingTheLoop() throws {
    let helper = try HelperProcess(["executor-exited-loop"], environment: Self.noBacktrace)
    let output = lines(of: helper, through: "RunLoopCore/")
    #expect(output.first == "calling-exited-loop")
    #expect(output.last?.contains("whose thread has exited") == true)
    #expect(output.last?.contains("outlived the loop's thread") == true)
    #expect(helper.waitForExit(timeout: .seconds(30)) == 128 + SIGILL)
  }

  @Test func aThreadExitingWithAJobStillQueuedStopsTheProcessInsteadOfDroppingIt() throws {
    let helper = try HelperProcess(["executor-stranded-jobs"], environment: Self.noBacktrace)
    let output = lines(of: helper, through: "RunLoopCore/")
    #expect(output.first == "exiting-with-queued-job")
    #expect(output.last?.contains("exited with 1 Swift concurrency job(s) still queued") == true)
    #expect(helper.waitForExit(timeout: .seconds(30)) == 128 + SIGILL)
  }

  @Test func theMainActorAndAWorkerLoopsActorCallEachOtherWhileTheMainLoopRunsACommonMode()
    throws
  {
    let helper = try HelperProcess(["executor-main-actor"])
    // Held while the main loop runs a mode that is not common.
    #expect(helper.readLine(timeout: .seconds(30)) == "private:[]")
    // Run in "tracking", a common mode other than the default; every round the worker's
    // actor ran on its loop and called the main actor back on the main thread.
    let rounds = (0..<5).map { "\($0):worker+main" }
    #expect(
      helper.readLine(timeout: .seconds(30))
        == "tracking:" + (["held"] + rounds + ["done"]).joined(separator: ","))
    #expect(helper.waitForExit(timeout: .seconds(30)) == 0)
  }
}
