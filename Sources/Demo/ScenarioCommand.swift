import ArgumentParser
import RunLoopTracing

/// `runloop-demo scenario NAME`: one concept of the guide as a short narrated run.
struct ScenarioCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "scenario",
    abstract: "Show one concept of the guide as a short narrated run (see --list).",
    discussion: """
      Each scenario prints what it sets up, what the run loop does (with the time and the \
      thread), and checks its claims (✓ or ✗). It exits 0 when every claim held (and, with \
      --json-log, the trace is complete: 74 when it lost records).

        runloop-demo scenario --list
        runloop-demo scenario modes
        runloop-demo scenario all        every scenario, one after the other
        runloop-demo scenario ports --json-log ports.jsonl
                                          trace every loop of the scenario, then draw it:
        runloop-demo trace timeline ports.jsonl --svg ports.svg
      """
  )

  @Flag(name: .long, help: "List the scenarios.")
  var list = false

  @Argument(help: ArgumentHelp("The scenario to run, or 'all'.", valueName: "name"))
  var name: String?

  @Option(
    name: .customLong("json-log"),
    help: ArgumentHelp(
      "Trace every loop of the scenario (threads it starts included) to this JSON log.",
      valueName: "path"))
  var jsonLog: String?

  func validate() throws {
    if list { return }
    if let jsonLog, jsonLog.isEmpty { throw ValidationError("--json-log needs a path") }
    guard let name else {
      throw ValidationError("name a scenario (runloop-demo scenario --list shows them)")
    }
    guard name == "all" || Scenario.named(name) != nil else {
      throw ValidationError(
        "no scenario '\(name)'; choose one of: \(Scenario.all.map(\.name).joined(separator: ", "))")
    }
  }

  func run() throws {
    ForegroundSignals.restoreDefault()
    if list {
      let width = Scenario.all.map(\.name.count).max() ?? 0
      for scenario in Scenario.all {
        StandardStreams.out("\(scenario.name.padding(toLength: width))  \(scenario.title)")
      }
      return
    }
    let chosen = name == "all" ? Scenario.all : [Scenario.named(name!)!]
    // Every loop of the process, present and future: a scenario's worker threads too.
    var tracer: LoopTracer?
    var sink: JSONLinesSink?
    if let jsonLog {
      Scenarios.jsonLogPath.withLock { $0 = jsonLog }
      do {
        sink = try JSONLinesSink(path: jsonLog)
        tracer = LoopTracer(sinks: [sink!])
      } catch {
        throw DemoError("cannot trace to '\(jsonLog)': \(error.message)")
      }
      tracer?.attachToAllLoops()
    }
    var failed: [String] = []
    StandardStreams.out(SequenceStep.legend)
    StandardStreams.out("")
    for scenario in chosen {
      StandardStreams.out("== \(scenario.name): \(scenario.title)")
      StandardStreams.out("   guide: \(scenario.guide)")
      if let article = scenario.article {
        StandardStreams.out("   article: Docs/RunLoopGuide.docc/\(article)")
      }
      let narration = Narration()
      do {
        try scenario.body(narration)
      } catch {
        narration.expect(false, "the scenario ran without error (\(error))")
      }
      failed += narration.failed.map { "\(scenario.name): \($0)" }
      StandardStreams.out("")
    }
    var traceComplete = true
    if let tracer, let sink, let jsonLog {
      let shutdownTimeout = Duration.seconds(5)
      tracer.close(timeout: shutdownTimeout)
      let statistics = sink.statistics
      traceComplete = statistics.isComplete
      if traceComplete {
        StandardStreams.out("trace: run id \(tracer.runID) in \(jsonLog)")
      } else {
        StandardStreams.error(
          DemoService.incompleteLogMessage(
            path: jsonLog, shutdownTimeout: shutdownTimeout, statistics))
        StandardStreams.out("trace INCOMPLETE: run id \(tracer.runID) in \(jsonLog)")
      }
    }
    guard failed.isEmpty else {
      throw DemoError(
        "\(failed.count) claim(s) did not hold:\n  " + failed.joined(separator: "\n  "))
    }
    if !traceComplete { throw ExitCode(DemoService.incompleteLogStatus) }
  }
}
