import Foundation
import RunLoopTestSupport
import Testing

/// What the scenarios narrate: each names its guide section and its article, each event line
/// says which step of the sequence of events it belongs to, and the scenarios that show a
/// mechanism print its steps in the order the guide gives.
@Suite("runloop-demo scenario: the narration shows the mechanism", .serialized)
struct ScenarioNarrationTests {
  /// One narrated event: its step (nil outside any pass) and its text after the thread name.
  struct Event: Equatable {
    let step: Int?
    let thread: String
    let text: String
  }

  /// The scenarios whose every event line names its step.
  static let stepNarrated: Set<String> = [
    "thread-attributes", "threads-exit", "exit-flag", "modes", "common-modes", "custom-source",
    "ports", "check-in", "named-ports", "sockets", "timers-grid", "timers-overrun",
    "timers-tolerance", "observers", "thread-observer", "performs", "nested-runs", "main-queue",
  ]

  /// The output of one scenario, from its `== name:` line to the next scenario's.
  static func run(_ name: String) throws -> String {
    let result = try runDemo(["scenario", name], timeout: .seconds(30))
    #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
    return result.stdout
  }

  /// The event lines of `output`: `    12.3 ms  step 9   main: text` or `... no pass  ...`.
  static func events(_ output: String) -> [Event] {
    output.split(separator: "\n").compactMap { line -> Event? in
      let text = String(line)
      guard let msRange = text.range(of: " ms  "),
        Double(text[..<msRange.lowerBound].trimmingCharacters(in: .whitespaces)) != nil
      else { return nil }
      let rest = text[msRange.upperBound...]
      let step: Int?
      if rest.hasPrefix("step ") {
        step = Int(rest.dropFirst(5).prefix { $0.isNumber })
      } else if rest.hasPrefix("no pass") {
        step = nil
      } else {
        return Event(step: -1, thread: "", text: String(rest))
      }
      let afterColumn = rest.dropFirst(7).drop { $0 == " " }
      guard let colon = afterColumn.range(of: ": ") else { return nil }
      return Event(
        step: step, thread: String(afterColumn[..<colon.lowerBound]),
        text: String(afterColumn[colon.upperBound...]))
    }
  }

  @Test func everyScenarioNamesItsGuideSectionAndAnArticleThatExists() throws {
    let result = try runDemo(["scenario", "all"], timeout: .seconds(60))
    let sections = result.stdout.components(separatedBy: "\n== ").dropFirst()
    #expect(sections.count == ScenarioCommandTests.names.count)
    for section in sections {
      let lines = section.split(separator: "\n").map(String.init)
      #expect(lines.count > 2 && lines[1].hasPrefix("   guide: "), "\(lines.first ?? "")")
      let article = try #require(lines.first { $0.hasPrefix("   article: ") }, "\(lines[0])")
      let path = article.dropFirst("   article: ".count).prefix { $0 != "," }
      #expect(
        FileManager.default.fileExists(atPath: packageRoot + "/" + path), "\(lines[0]): \(path)")
      // Scenarios added since this list was written are held to it once they are in it.
      let name = String(lines[0].prefix { $0 != ":" })
      guard Self.stepNarrated.contains(name) else { continue }
      for event in Self.events(section) {
        #expect(
          event.step == nil || (1...10).contains(event.step!), "\(lines[0]): \(event.text)")
      }
    }
  }

  @Test func observersScenarioShowsBeforeTimersBeforeTheSleepAndTheFireAfterTheWakeUp() throws {
    let output = try Self.run("observers")
    let steps = Self.events(output).map(\.step)
    #expect(steps == [1, 2, 3, 6, 7, 8, 9, 10], "\(output)")
    #expect(output.contains("The classic puzzle"))
    let sleep = try #require(Self.events(output).first { $0.step == 7 })
    #expect(sleep.text.hasPrefix("asleep for ") && sleep.text.contains(" ms"), "\(output)")
  }

  @Test func customSourceScenarioIsWokenThenGoesBackToStepTwoAndPerformsInStepFour() throws {
    let output = try Self.run("custom-source")
    let events = Self.events(output).filter { $0.thread == "worker" && $0.step != nil }
    let steps = events.map(\.step)
    // The sleep the wake-up ends, the wake-up, back to step 2, then the perform in step 4.
    #expect(Array(steps.prefix(4)) == [7, 8, 2, 4], "\(output)")
    #expect(events.count >= 4 && events[1].text == "woken by wakeUp()", "\(output)")
    #expect(events.count >= 4 && events[2].text.hasPrefix("back to step 2"), "\(output)")
    #expect(events.count >= 4 && events[3].text.hasPrefix("perform: drained 3 commands"))
  }

  @Test func mainSyncDeadlockScenarioKillsTheStuckChildAndPerformAndWaitEndsAtItsDeadline()
    throws
  {
    let output = try Self.run("main-sync-deadlock")
    let texts = Self.events(output).map(\.text)
    // The first child said both of its threads wait, and was killed still waiting.
    let waits = try #require(texts.firstIndex { $0.hasPrefix("child: main thread waits") })
    let calls = try #require(texts.firstIndex { $0.hasPrefix("child: worker calls") })
    let killed = try #require(texts.firstIndex { $0.hasSuffix("deadlocked, killed") })
    #expect(waits < killed && calls < killed, "\(output)")
    #expect(!texts.contains { $0.contains("returned") || $0.contains("joined the worker") })
    // The second child, main.sync on the main thread, never got past it.
    let direct = try #require(texts.firstIndex { $0.hasPrefix("child: main thread calls") })
    #expect(direct > killed && texts.count > direct + 1, "\(output)")
    #expect(
      texts[direct + 1].hasPrefix("stopped by signal") || texts[direct + 1].hasSuffix("killed"))
    // In this process: the deadline ends the wait, a running main loop serves it, inline runs.
    #expect(texts.contains("performAndWait on the main loop: timedOut"), "\(output)")
    #expect(texts.contains("the worker's request runs on the main thread"), "\(output)")
    #expect(!output.contains("✗"), "\(output)")
  }

  @Test func queuesScenarioRunsTheSerialQueueAndTheLoopThreadInOrderAndTheOthersSideBySide()
    throws
  {
    let output = try Self.run("queues")
    let texts = Self.events(output).map(\.text)
    let serial = try #require(texts.first { $0.hasPrefix("serial queue: ") })
    #expect(serial.contains("order 0 1 2 3 4 5, at most 1 at once"), "\(output)")
    let loop = try #require(texts.first { $0.hasPrefix("loop thread 'worker': ") })
    #expect(loop.hasSuffix("order 0 1 2 3 4 5, at most 1 at once, on 1 thread(s)"), "\(output)")
    let global = try #require(texts.first { $0.hasPrefix("global(): ") })
    let peak = global.components(separatedBy: "at most ").last?.split(separator: " ").first
    #expect(Int(peak.map(String.init) ?? "") ?? 0 >= 2, "\(output)")
    #expect(!output.contains("✗"), "\(output)")
  }

  @Test func threadExplosionScenarioMakesAThreadPerTaskAndTwoLoopThreadsServeThemAll() throws {
    let output = try Self.run("thread-explosion")
    let texts = Self.events(output).map(\.text)
    #expect(texts.contains("a thread per task: 32 waiting at once on 32 threads"), "\(output)")
    #expect(texts.contains("two loop threads: 32 tasks on 2 threads"), "\(output)")
    #expect(!output.contains("✗"), "\(output)")
  }

  @Test func joinableExitScenarioShowsOnlyTheJoinedThreadFinishingBeforeTheExit() throws {
    let output = try Self.run("joinable-exit")
    let texts = Self.events(output).map(\.text)
    // Only the joined child's saver wrote its data, and before that child's exit.
    #expect(texts.filter { $0 == "child: saver wrote its data" }.count == 1, "\(output)")
    let joins = try #require(texts.firstIndex(of: "child: main thread joins the saver"))
    #expect(texts[joins + 1] == "child: saver wrote its data", "\(output)")
    #expect(texts[joins + 2] == "child: main thread exits the process", "\(output)")
    #expect(texts.filter { $0 == "child: main thread exits the process" }.count == 3)
    #expect(texts.contains("child: join() on the detached saver refused"), "\(output)")
    #expect(!output.contains("✗"), "\(output)")
  }

  @Test func portsScenarioShowsAPortReadyBeforeTheSleepFoundInStepFive() throws {
    let output = try Self.run("ports")
    let events = Self.events(output)
    let sent = try #require(events.firstIndex { $0.text.hasPrefix("timer 'send-to-own-port'") })
    let handled = try #require(events.firstIndex { $0.text == "own.port: message 7" })
    let found = try #require(events.firstIndex { $0.step == 5 })
    #expect(sent < handled && handled < found, "\(output)")
    #expect(events[sent].step == 9 && events[handled].step == 9, "\(output)")
    #expect(events[found].text.contains("reported steps 2 3 9: own.port was ready"), "\(output)")
  }

  @Test func timersGridScenarioShowsALateFireAndTheNextFireStillOnItsGrid() throws {
    let output = try Self.run("timers-grid")
    let fires = Self.events(output).filter { $0.text.hasPrefix("fire ") }
    #expect(fires.count == 6 && fires.allSatisfy { $0.step == 9 }, "\(output)")
    let numbers = fires.map { fire -> (due: Double, ran: Double) in
      let words = fire.text.split(separator: " ")
      return (Double(words[4]) ?? -1, Double(words[8]) ?? -1)
    }
    #expect(numbers.map(\.due) == [100, 200, 300, 400, 500, 600], "\(output)")
    #expect(numbers.count == 6 && numbers[3].ran - numbers[3].due >= 40, "\(output)")
    #expect(numbers.allSatisfy { $0.ran >= $0.due }, "\(output)")
  }

  @Test func threadObserverScenarioRunsEachSliceFromEntryToExitOnTheWorkersLoop() throws {
    let output = try Self.run("thread-observer")
    let events = Self.events(output)
    #expect(events.allSatisfy { $0.thread == "worker" }, "\(output)")
    let runs = events.enumerated().filter { $0.element.text.hasPrefix("run returned") }
    #expect(runs.count >= 2, "\(output)")
    for (index, _) in runs { #expect(index > 0 && events[index - 1].step == 10, "\(output)") }
    #expect(events.first?.step == 1)
    #expect(runs.last?.element.text == "run returned 'finished'", "\(output)")
    #expect(events.filter { $0.text.hasPrefix("timer 'tick' fired") }.allSatisfy { $0.step == 9 })
  }

  @Test func exitFlagScenarioSetsTheFlagInStepFourAndNeverSleeps() throws {
    let output = try Self.run("exit-flag")
    let events = Self.events(output)
    #expect(events.map(\.step) == [4, nil], "\(output)")
    #expect(events.allSatisfy { $0.thread == "worker" })
  }

  @Test func socketsScenarioAcceptsReadsAndAnswersInStepNine() throws {
    let output = try Self.run("sockets")
    let events = Self.events(output)
    #expect(events.allSatisfy { $0.step == 9 }, "\(output)")
    let texts = events.map(\.text)
    let accepted = try #require(texts.firstIndex(of: "listener: accepted a connection"))
    let read = try #require(texts.firstIndex(of: "server: read 'ping'"))
    let answered = try #require(texts.firstIndex(of: "client: read 'PING'"))
    #expect(accepted < read && read < answered)
    #expect(texts.last == "server: the client closed its end")
  }

  @Test func namedPortsScenarioServesAnotherProcess() throws {
    let output = try Self.run("named-ports")
    let events = Self.events(output)
    let started = try #require(events.first { $0.text.hasPrefix("started the client, pid ") })
    let pid = started.text.split(separator: " ").last.map(String.init) ?? "?"
    #expect(pid != "\(getpid())")
    let messages = events.filter { $0.text.hasPrefix("message ") }
    #expect(messages.count == 2 && messages.allSatisfy { $0.step == 9 }, "\(output)")
    #expect(messages.allSatisfy { $0.text.contains("from pid \(pid):") }, "\(output)")
  }

  @Test func mainQueueScenarioRunsTheBlockAndTheMainActorJobOnlyInACommonMode() throws {
    let output = try Self.run("main-queue")
    let parts = output.components(separatedBy: "Run it in 'default'")
    #expect(parts.count == 2 && Self.events(parts[0]).isEmpty, "\(output)")
    let events = Self.events(parts.last ?? "")
    #expect(events.count == 2 && events.allSatisfy { $0.step == 9 && $0.thread == "main" })
  }

  @Test func threadAttributesScenarioShowsTheKernelNameStackAndNice() throws {
    let output = try Self.run("thread-attributes")
    #expect(output.contains("kernel name 'attributes-demo', stack 256 KiB, nice 10"), "\(output)")
    #expect(output.contains("µs a thread, created, run and joined"))
  }
}
