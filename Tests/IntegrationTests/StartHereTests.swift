import Foundation
import RunLoopCore
import RunLoopTimers
import Testing

/// The article "Start here" (StartHere.md): its program is the file the package builds as
/// `runloop-start-here`, it is fifteen lines, and it prints exactly what the article shows.
@Suite("Start here: the first run loop")
struct StartHereTests {
  static let article = SnippetCheckTests.catalog.appendingPathComponent("StartHere.md")
  static let program = SnippetCheckTests.docs.appendingPathComponent("StartHere/main.swift")

  @Test func theArticleShowsTheWholeProgramAndItIsFifteenLines() throws {
    let text = try String(contentsOf: Self.article, encoding: .utf8)
    let source = try String(contentsOf: Self.program, encoding: .utf8)
    let blocks = SnippetCheckTests.swiftBlocks(in: text)
    #expect(blocks.count == 1, "\(blocks)")
    let shown = blocks.first ?? ""
    #expect(shown == source.trimmingCharacters(in: .newlines))
    #expect(shown.split(separator: "\n", omittingEmptySubsequences: false).count == 15)
  }

  @Test func theProgramPrintsExactlyWhatTheArticleShows() throws {
    let text = try String(contentsOf: Self.article, encoding: .utf8)
    let shown = try #require(SnippetCheckTests.blocks(in: text, language: "text").first)
    let (status, output) = try GuideProgram("runloop-start-here").run()
    #expect(status == 0)
    #expect(output.trimmingCharacters(in: .newlines) == shown, "\(output)")
  }

  /// The article's explanation: the main loop's default mode watches the main queue, so its
  /// run times out; on a thread of its own the same loop finishes after its last timer.
  @Test func aSecondaryThreadsLoopFinishesOnceItsLastOneShotTimerHasFired() throws {
    let outcome = GuardedState<(RunResult?, Int)>((nil, 0))
    let worker = RunLoopThread(name: "start-here") { thread in
      for n in 1...3 {
        let timer = try LoopTimer(fireAt: .now + .milliseconds(20 * n)) { _ in
          outcome.withLock { $0.1 += 1 }
        }
        try thread.runLoop.add(timer, mode: .default)
      }
      let result = try thread.runLoop.run(mode: .default, timeout: .seconds(30))
      outcome.withLock { $0.0 = result }
    }
    let started = ContinuousClock.now
    try worker.start()
    try worker.join()
    let (result, fired) = outcome.withLock { $0 }
    #expect(result == .finished && fired == 3)
    #expect(ContinuousClock.now - started < .seconds(30))
  }
}
