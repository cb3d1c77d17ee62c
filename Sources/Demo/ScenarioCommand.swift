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
        runloop-demo scenario observers --predict
                                          an exercise: say what will happen first (the
                                          answer is read from standard input), then run
                                          and see; exits 0 when the prediction held, 3 when
                                          it did not, 66 when standard input ended first
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

  @Flag(
    name: .long,
    help: ArgumentHelp(
      "An exercise: state the set-up, ask in which order things happen, read the answer"
        + " from standard input, then run the scenario and grade the answer with its own lines."
    ))
  var predict = false

  /// The exit status of a prediction that did not hold (the scenario's claims did).
  static let wrongPredictionStatus: Int32 = 3
  /// The exit status when standard input ends before an answer (sysexits' EX_NOINPUT).
  static let noAnswerStatus: Int32 = 66
  /// The exit status of an answer that is not an order of the letters (EX_DATAERR).
  static let badAnswerStatus: Int32 = 65

  func validate() throws {
    if list { return }
    if predict {
      let names = Scenario.withExercises.map(\.name).joined(separator: ", ")
      guard let name, let scenario = Scenario.named(name), scenario.exercise != nil else {
        throw ValidationError("--predict needs one scenario with an exercise: \(names)")
      }
      if jsonLog != nil { throw ValidationError("--predict does not trace; drop --json-log") }
      return
    }
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
    if predict, let scenario = Scenario.named(name!), let exercise = scenario.exercise {
      try runExercise(scenario, exercise)
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

  /// `--predict`: asks, reads the answer, runs the scenario and grades the answer.
  private func runExercise(_ scenario: Scenario, _ exercise: Exercise) throws {
    StandardStreams.out("== \(scenario.name): exercise")
    for line in exercise.setUp { StandardStreams.out("   \(line)") }
    StandardStreams.out("")
    StandardStreams.out(exercise.question)
    for (index, event) in exercise.events.enumerated() {
      StandardStreams.out("  \(Exercise.letter(index))  \(event.text)")
    }
    let letters = Exercise.letters(Array(exercise.events.indices)).replacingOccurrences(
      of: " ", with: "")
    StandardStreams.out("Your answer, the letters in order (for example \(letters)):")
    guard let answer = readLine() else {
      StandardStreams.error(
        "runloop-demo: standard input ended before an answer; type the letters in order,"
          + " for example: echo \(letters) | runloop-demo scenario \(scenario.name) --predict")
      throw ExitCode(Self.noAnswerStatus)
    }
    guard let predicted = exercise.order(from: answer) else {
      StandardStreams.error(
        "runloop-demo: '\(answer)' is not an order of the letters \(letters): give each"
          + " letter once")
      throw ExitCode(Self.badAnswerStatus)
    }
    StandardStreams.out("")
    StandardStreams.out("== \(scenario.name): \(scenario.title)")
    let narration = Narration()
    do {
      try scenario.body(narration)
    } catch {
      narration.expect(false, "the scenario ran without error (\(error))")
    }
    guard narration.failed.isEmpty else {
      throw DemoError(
        "\(narration.failed.count) claim(s) did not hold, so the run cannot grade the answer:\n  "
          + narration.failed.joined(separator: "\n  "))
    }
    guard let actual = exercise.actualOrder(in: narration.eventLines) else {
      throw DemoError("the run did not show every event of the exercise, so it cannot grade it")
    }
    StandardStreams.out("")
    StandardStreams.out("you said:   \(Exercise.letters(predicted))")
    StandardStreams.out("the loop:   \(Exercise.letters(actual))")
    for index in actual {
      StandardStreams.out("  \(Exercise.letter(index))  \(exercise.events[index].text)")
    }
    if predicted == actual {
      StandardStreams.out("✓ your prediction held")
    } else {
      StandardStreams.out("✗ not this time: the order above is the one the loop printed")
      throw ExitCode(Self.wrongPredictionStatus)
    }
  }
}
