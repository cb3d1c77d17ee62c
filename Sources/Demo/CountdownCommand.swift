import ArgumentParser

/// `runloop-demo countdown DURATION`: the workbook's countdown-timer mission in a terminal.
struct CountdownCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "countdown",
    abstract: "The workbook's countdown timer in a terminal: p pauses, r resumes, q stops.",
    discussion: """
      A one-second repeating LoopTimer counts down; pausing suspends it (the time left to \
      its next tick is kept) and resuming resumes it, as the workbook does with a \
      DispatchSourceTimer's suspend() and resume(). Standard input is a DescriptorSource on \
      the same run loop: on a terminal it is switched to raw mode (no line buffering, no \
      echo) and restored on exit, also after Ctrl-C. The colour turns red as time runs out.

        runloop-demo countdown 10
        runloop-demo countdown 1m30s

      Keys: p (or space) pause, r resume, q quit. Exit status 0 when the time is up or on q.
      """
  )

  @Argument(
    help: ArgumentHelp(
      "How long to count down: seconds or with a unit (10, 90s, 1m30s); whole seconds.",
      valueName: "duration"))
  var duration: DurationArgument

  @Flag(name: .long, help: "No colours, even on a terminal.")
  var noColor = false

  func validate() throws {
    guard duration.seconds >= 1 else {
      throw ValidationError("a countdown needs at least 1 second, not \(duration.seconds)")
    }
  }

  func run() throws {
    let seconds = Int(duration.seconds.rounded(.up))
    let session = CountdownSession(seconds: seconds, colors: !noColor)
    let status = try session.run()
    if status != 0 { throw ExitCode(status) }
  }
}
