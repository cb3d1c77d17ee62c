import ArgumentParser

/// The `runloop-demo` command: a traced multi-threaded service (`run`, the default), short
/// narrated scenarios, the workbook's countdown and tools over a trace.
struct DemoCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "runloop-demo",
    abstract: "Run loops you can watch: a traced service, narrated scenarios, a countdown.",
    discussion: """
      A run loop is an event-processing loop: a thread sleeps until a timer is due, a port \
      receives a message or a custom source is signalled, handles it, and sleeps again. \
      This program shows the run-loop architecture of Apple's Threading Programming Guide \
      rebuilt for Linux (epoll, eventfd, timerfd, signalfd).

      Start here:
        runloop-demo run --duration 5        a service with 2 worker threads, traced
        runloop-demo scenario --list         the guide's concepts, one short run each
        runloop-demo countdown 10            the workbook's timer mission
        runloop-demo trace summary runloop-trace.jsonl
        runloop-demo top runloop-trace.jsonl     the loops of a running service, live

      Every loop of `run` is traced: one JSON object per activity, call-out and sleep in \
      the JSON log, and the same records in journald (journalctl -t runloop-demo).
      """,
    version: "1.0.0",
    subcommands: [
      RunCommand.self, ScenarioCommand.self, CountdownCommand.self, TraceCommand.self,
      TopCommand.self,
    ],
    defaultSubcommand: RunCommand.self
  )
}
