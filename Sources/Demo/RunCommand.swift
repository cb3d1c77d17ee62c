import ArgumentParser
import RunLoopPorts
import RunLoopPrometheus

/// `runloop-demo run`: the traced service.
struct RunCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "run",
    abstract: "Run a traced service: the main run loop and worker threads with loops of their own.",
    discussion: """
      What happens:
        1. N worker threads start, each with its own run loop, port and custom input source.
        2. Each worker checks in: it sends its port to the main thread's port (the guide's
           check-in protocol). Under systemd the service then says READY=1.
        3. Every 500 ms a heartbeat timer hands out jobs: half through each worker's
           custom source and command buffer (Figure 3-2), half as port messages. A
           debouncer reports when a burst of jobs has settled.
        4. Once, the main loop runs a nested run in a custom mode, "critical": timers,
           ports and signals (in the common modes) go on; the low-priority "progress"
           source, in the default mode only, is held until the loop is back in default.
        5. On SIGTERM/SIGINT (read through a signalfd on the main loop), when
           standard output's reader goes away (`run | head -1`), or at --duration, the
           loops stop, the threads are joined, the logs are written out (within
           --shutdown-timeout for all of them together), and a table shows each loop's
           iterations, time asleep, call-outs, timer lateness and journald drops.

      SIGHUP reopens the JSON log (after a rotation renamed it) and the run goes on.
      A second SIGTERM or SIGINT during the shutdown ends the process at once, with
      status 143 or 130 and a line saying what it abandoned (workers still running,
      records not yet written).

      With --metrics-address, the main loop also serves the loop metrics (utilization,
      call-out delays by kind, stalls, drops, perform queue depths) to Prometheus at
      http://<address>/metrics.

      Exit status: 0 when the JSON log is complete; 74 when it lost records (a full disk,
      a failed write, a file deleted or truncated during the run, a reader too slow for the
      shutdown bound), with the figures on standard error; 73 when another process writes
      the log; 69 when the metrics address cannot be listened on (taken, or not this
      host's); 71 when the system refuses a run loop's descriptors or a thread; 1 for
      other errors, 64 for bad flags.

      Every activity, call-out and sleep of every loop goes to the JSON log (complete)
      and to journald (best effort). Find this run's records with:
        journalctl -t runloop-demo RUNLOOP_RUN=<run id> -o json
        runloop-demo trace summary runloop-trace.jsonl
      """
  )

  // Unconditional: "-1" is read as the (invalid) value, not as an unknown flag.
  @Option(
    name: .long, parsing: .unconditional,
    help: "Worker threads, each with its own run loop (1 to 16).")
  var workers: Int = 2

  // Unconditional: "-1" is read as the (invalid) value, not as a missing one.
  @Option(
    name: .long, parsing: .unconditional,
    help: ArgumentHelp(
      "How long to run: seconds or with a unit (3, 2.5, 500ms, 1m30s). Without it the service runs until SIGTERM or SIGINT.",
      valueName: "duration"))
  var duration: DurationArgument?

  @Option(
    name: .customLong("json-log"),
    help: ArgumentHelp("Where to write the JSON Lines trace.", valueName: "path"))
  var jsonLog: String = "runloop-trace.jsonl"

  @Option(
    name: .customLong("shutdown-timeout"),
    help: ArgumentHelp(
      "At shutdown, how long writing out the JSON log and journald together may take.",
      valueName: "duration"))
  var shutdownTimeout: DurationArgument = DurationArgument(.seconds(5))

  @Option(
    name: .customLong("fifo-wait"),
    help: ArgumentHelp(
      "When --json-log is a FIFO nobody reads yet, how long to wait for a reader.",
      valueName: "duration"))
  var fifoWait: DurationArgument = DurationArgument(.seconds(5))

  @Flag(name: .customLong("no-journal"), help: "Do not send the trace to journald.")
  var noJournal = false

  @Option(name: .long, help: "The journald SYSLOG_IDENTIFIER (what journalctl -t filters on).")
  var identifier: String = "runloop-demo"

  @Option(name: .customLong("journal-socket"), help: .hidden)
  var journalSocket: String?

  @Option(
    name: .customLong("journal-rate-limit"),
    help: ArgumentHelp(
      "journald's limit for this service, as its RateLimitBurst=/RateLimitIntervalSec= say (10000/30s, journald's default), or none; the loops share it, and what is over it is dropped, counted and reported here instead of by journald.",
      valueName: "burst/interval"))
  var journalRateLimit = JournalBudgetArgument(.journaldDefault)

  @Option(
    name: .customLong("stall-threshold"),
    help: ArgumentHelp(
      "Report any loop awake this long without sleeping (a stall watchdog; off without it).",
      valueName: "duration"))
  var stallThreshold: DurationArgument?

  @Option(
    name: .customLong("metrics-address"),
    help: ArgumentHelp(
      "Serve the loop metrics to Prometheus at http://<address>/metrics (127.0.0.1:9464, [::1]:9464; port 0 picks a free one).",
      valueName: "host:port"))
  var metricsAddress: String?

  @Option(name: .customLong("inject-stall"), help: .hidden)
  var injectStall: DurationArgument?

  @Option(name: .customLong("inject-worker-stall"), help: .hidden)
  var injectWorkerStall: DurationArgument?

  func validate() throws {
    guard (1...16).contains(workers) else {
      throw ValidationError("--workers must be between 1 and 16, not \(workers)")
    }
    guard !jsonLog.isEmpty else { throw ValidationError("--json-log needs a path") }
    guard !identifier.isEmpty else { throw ValidationError("--identifier cannot be empty") }
    _ = try metricsEndpoint()
  }

  /// The parsed `--metrics-address`; a bad one is a usage error (exit status 64).
  private func metricsEndpoint() throws -> SocketEndpoint? {
    guard let metricsAddress else { return nil }
    do {
      return try PrometheusEndpoint.address(metricsAddress)
    } catch {
      throw ValidationError("--metrics-address: \(error.message)")
    }
  }

  func run() throws {
    let service = DemoService(
      options: .init(
        workers: workers, duration: duration?.duration, jsonLogPath: jsonLog,
        journal: !noJournal, journalSocket: journalSocket, journalBudget: journalRateLimit,
        identifier: identifier,
        shutdownTimeout: shutdownTimeout.duration, fifoWait: fifoWait.duration,
        stallThreshold: stallThreshold?.duration, injectedStall: injectStall?.duration,
        injectedWorkerStall: injectWorkerStall?.duration, metricsAddress: try metricsEndpoint()))
    let status = try service.run()
    if status != 0 { throw ExitCode(status) }
  }
}
