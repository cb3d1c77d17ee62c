import Glibc
import Logging
import RunLoopCore
import RunLoopJournal
import RunLoopLogging
import RunLoopObservers
import RunLoopPorts
import RunLoopTimers
import RunLoopTracing
import Synchronization

/// The `run` command's service: the main run loop plus worker threads with loops of their
/// own, every loop traced to the JSON log and journald.
///
/// On the main loop:
/// - a signal source (SIGTERM, SIGINT over signalfd) and the main port, in the common modes;
/// - a heartbeat timer (common modes) that hands out a burst of jobs every 500 ms, half
///   through the workers' command buffers, half through their ports;
/// - a debouncer that reports when a burst has settled;
/// - a low-priority custom source, "progress", in the default mode only: workers signal it
///   after each job, so while the loop runs the "critical" mode it is held;
/// - once, inside the first heartbeat's call-out, the critical section: a nested run in mode
///   "critical".
final class DemoService: @unchecked Sendable {
  // Unchecked: its `var`s are set in `run()` on the main thread before any other thread
  // sees the service; what the threads share is behind `state` or in atomics.
  struct Options: Sendable {
    var workers: Int
    var duration: Duration?
    var jsonLogPath: String
    var journal: Bool
    var journalSocket: String?
    /// journald's budget for the service, shared among the loops' sinks.
    var journalBudget = JournalBudgetArgument(.journaldDefault)
    var identifier: String
    /// One bound for writing out every trace sink at shutdown (the JSON log first).
    var shutdownTimeout: Duration = .seconds(5)
    /// How long to wait for a reader when the JSON log is a FIFO nobody reads yet.
    var fifoWait: Duration = .seconds(5)
    /// When set, a stall watchdog with this threshold watches every loop.
    var stallThreshold: Duration? = nil
    /// For tests: the second heartbeat blocks the main loop this long.
    var injectedStall: Duration? = nil
    /// For tests: the second heartbeat blocks the first worker's loop this long.
    var injectedWorkerStall: Duration? = nil
    /// When set, the main loop serves the loop metrics to Prometheus here.
    var metricsAddress: SocketEndpoint? = nil
  }

  /// The exit status when the metrics address cannot be listened on (EX_UNAVAILABLE).
  static let metricsUnavailableStatus: Int32 = 69

  /// The exit status when the JSON log lost records (EX_IOERR of sysexits.h).
  static let incompleteLogStatus: Int32 = 74
  /// The exit status when another process writes the JSON log (EX_CANTCREAT).
  static let logInUseStatus: Int32 = 73
  /// The exit status when the system refuses a loop's descriptors or a thread (EX_OSERR).
  static let systemErrorStatus: Int32 = 71

  /// The mode of the critical section: a common mode, so timers, ports and signals in the
  /// common modes go on; the low-priority source is not in it and waits.
  static let critical = LoopMode("critical")

  let options: Options
  let notifier = SystemdNotifier.fromEnvironment()
  private let started = ContinuousClock.now
  // Set once in run(), before any worker starts.
  private(set) var mainPort: InProcessPort!
  // Set once in run(), before any loop runs: the service's own log lines, to journald with
  // the loop's context (run id, loop, mode, pass, call-out), when the journal is on.
  private(set) var logger: Logger?
  private var progressSource: CustomInputSource!
  private var debouncer: Debouncer!
  private var workers: [DemoWorker] = []
  private let progressPending = Atomic<Int>(0)
  // What the shutdown is doing, for the message of a signal that abandons it; and whether it
  // is over (the watch for such a signal then ends).
  private let shutdownStep = GuardedState("stopping the main loop")
  private let shutdownOver = Atomic<Bool>(false)
  // Guarded by its own lock: everything the loop threads share.
  private let state = GuardedState(State())

  private struct State {
    var checkedIn: [String: InProcessPort] = [:]
    var registered: Set<String> = []
    var nextJob = 1
    var sent = 0
    var done = 0
    var doneByChannel: [DemoJob.Channel: Int] = [:]
    var burstStarted: ContinuousClock.Instant?
    var burstSize = 0
    var heartbeats = 0
    var progressUpdates = 0
    var shutdownReason: String?
    var ready = false
    var heldAtCriticalExit: Int?
  }

  init(options: Options) {
    self.options = options
  }

  // MARK: - Running

  func run() throws -> Int32 {
    let mainLoop: EventRunLoop
    do {
      mainLoop = try EventRunLoop.makeCurrent()
    } catch {
      StandardStreams.error("runloop-demo: cannot start: \(error.message)")
      return Self.systemErrorStatus
    }
    // A reader that goes away (`runloop-demo run | head -1`) ends the run like SIGTERM: with
    // SIGPIPE ignored the next write fails with EPIPE, see say(_:).
    signal(SIGPIPE, SIG_IGN)
    // Before anything is written: a taken address ends the run with nothing half started.
    var metricsServer: MetricsServer?
    if let address = options.metricsAddress {
      do {
        metricsServer = try MetricsServer(address: address)
      } catch {
        StandardStreams.error(
          "runloop-demo: cannot serve metrics at \(address): \(error.message)")
        return Self.metricsUnavailableStatus
      }
    }
    let jsonSink: JSONLinesSink
    do {
      jsonSink = try openJSONLog()
    } catch let error as RunLoopError where error.code == .alreadyInUse {
      StandardStreams.error("runloop-demo: cannot write the JSON log: \(error.message)")
      return Self.logInUseStatus
    }
    var sinks: [any TraceSink] = [jsonSink]
    var journal: PerLoopJournal?
    if options.journal {
      let socketPath = options.journalSocket ?? "/run/systemd/journal/socket"
      if PerLoopJournal.journalAnswers(at: socketPath) {
        let destination: JournalSink.Destination =
          options.journalSocket.map { .socket(path: $0) } ?? .systemJournal
        // Every loop (the main loop and each worker's) has a sink; each gets its share.
        let share = options.journalBudget.share(among: options.workers + 1)
        journal = PerLoopJournal(identifier: options.identifier, destination: destination) {
          identifier, destination throws(RunLoopError) in
          try JournalSink(identifier: identifier, destination: destination, rateLimit: share)
        }
        sinks.append(journal!)
        // Made before the tracer is attached: the provider turns the loop context on.
        let provider = Logger.MetadataProvider.runLoop()
        let identifier = options.identifier
        logger = Logger(label: "runloop-demo.service") {
          JournalLogHandler(
            label: $0, identifier: identifier, destination: destination,
            metadataProvider: provider)
        }
      } else {
        StandardStreams.error(
          "runloop-demo: journald is not available (no journal answers at \(socketPath)); "
            + "tracing to the JSON log only")
      }
    }
    let tracer = LoopTracer(sinks: sinks)
    let metrics = LoopMetrics(exportingTo: metricsServer?.factory)
    tracer.attachToAllLoops()
    metrics.attachToAllLoops()
    let watchdog = options.stallThreshold.map {
      StallWatchdog(threshold: $0, reportingTo: tracer)
    }
    watchdog?.attachToAllLoops()

    say(
      "runloop-demo: run id \(tracer.runID), pid \(getpid()), \(options.workers) workers, "
        + (options.duration.map { "for \(DurationArgument($0).seconds) s" }
          ?? "until SIGTERM/SIGINT"))
    say("  JSON log: \(options.jsonLogPath)")
    if let threshold = options.stallThreshold {
      say("  stall watchdog: loops awake over \(DurationArgument(threshold).seconds * 1000) ms")
    }
    if journal != nil {
      say("  journald: journalctl -t \(options.identifier) RUNLOOP_RUN=\(tracer.runID)")
    }
    if let metricsServer, case .tcp(let host, _)? = options.metricsAddress {
      try metricsServer.start(on: mainLoop) { [journal] in
        MetricsServer.Totals(
          stalls: watchdog?.reports.stalls ?? 0, journalDrops: journal?.droppedOrFailed ?? 0,
          jsonRecordsLost: jsonSink.statistics.recordsLost,
          jsonRecordsPending: jsonSink.statistics.recordsPending)
      }
      let shown = host.contains(":") ? "[\(host)]" : host
      say("  metrics: http://\(shown):\(metricsServer.endpoint.localPort ?? 0)/metrics")
    }

    mainLoop.addCommonMode(Self.critical)
    let signals = try SignalSource(signals: [SIGTERM, SIGINT, SIGHUP], name: "signals") {
      [self] received in
      // A daemon's SIGHUP means "reopen your log" (after logrotate renamed it).
      guard received.signal != SIGHUP else {
        say(
          "\(stamp()) SIGHUP from pid \(received.senderPID): reopening the JSON log at "
            + options.jsonLogPath)
        jsonSink.reopen()
        return
      }
      guard state.withLock({ $0.shutdownReason == nil }) else {
        abandonShutdown(received.signal, from: received.senderPID)
      }
      requestShutdown("\(Self.signalName(received.signal)) from pid \(received.senderPID)")
    }
    try signals.add(to: mainLoop, mode: .common)

    mainPort = try InProcessPort(name: "main.port") { [self] message in handle(message) }
    try mainPort.add(to: mainLoop, mode: .common)

    progressSource = CustomInputSource(name: "progress (low priority)", order: 10) { [self] in
      progressRan()
    }
    try mainLoop.add(progressSource, mode: .default)

    debouncer = Debouncer(
      delay: .milliseconds(120), loop: mainLoop, modes: [.common], name: "burst-settled"
    ) { [self] in burstSettled() }

    let heartbeat = try LoopTimer(
      fireAt: .now + .milliseconds(500), every: .milliseconds(500), tolerance: .milliseconds(20),
      name: "heartbeat"
    ) { [self] _ in heartbeatFired() }
    try mainLoop.add(heartbeat, mode: .common)

    var extraTimers: [LoopTimer] = [heartbeat]
    if let interval = notifier.watchdogInterval {
      // Fed only while no loop is stalled: the main loop's timer stops with the main loop,
      // and the stall watchdog, when there is one, speaks for the workers' loops.
      let withheld = GuardedState(false)
      let ping = try LoopTimer(fireAt: .now, every: interval, name: "watchdog") { [self] _ in
        let stalled = watchdog.map { $0.reports.stalls > $0.reports.recoveries } ?? false
        let wasWithheld = withheld.withLock { state in
          defer { state = stalled }
          return state
        }
        if stalled {
          if !wasWithheld { notifier.notify("STATUS=watchdog withheld: a loop is stalled") }
          return
        }
        if wasWithheld { notifier.notify("STATUS=running") }
        notifier.notify("WATCHDOG=1")
      }
      try mainLoop.add(ping, mode: .common)
      extraTimers.append(ping)
      say("  systemd watchdog: pinging every \(DurationArgument(interval).seconds) s")
    }
    if let duration = options.duration {
      let stopper = try LoopTimer(fireAt: .now + duration, name: "duration") { [self] _ in
        requestShutdown("--duration elapsed")
      }
      try mainLoop.add(stopper, mode: .common)
      extraTimers.append(stopper)
    }

    // A worker the system refuses (no descriptor for its loop, no thread) ends the run the
    // graceful way: the workers already started are joined and the logs written out.
    var startFailure: RunLoopError?
    for index in 1...options.workers {
      let worker = DemoWorker(index: index, service: self)
      do {
        try worker.thread.start()
      } catch {
        startFailure = error
        StandardStreams.error("runloop-demo: cannot start \(worker.name): \(error.message)")
        requestShutdown("\(worker.name) could not start")
        break
      }
      workers.append(worker)
    }
    abandoned = { [journal, started = workers] in
      var left: [String] = []
      let running = started.filter { $0.thread.state != .finished }.map(\.name)
      if !running.isEmpty { left.append("\(running.joined(separator: ", ")) still running") }
      let pending = jsonSink.statistics.recordsPending
      if pending > 0 {
        left.append("\(pending) JSON log records not yet written (the log is incomplete)")
      }
      if let unsent = journal?.unsent, unsent > 0 {
        left.append("\(unsent) journald entries not yet sent")
      }
      return left.isEmpty ? "nothing left to write" : left.joined(separator: "; ")
    }

    // The main loop runs at least once, so that its run is in the trace even when the
    // shutdown came first (standard output closed while the service started): a queued
    // stop ends that run after one pass, as a signal read in its first pass would.
    repeat {
      if state.withLock({ $0.shutdownReason != nil }) {
        mainLoop.perform { EventRunLoop.current.stop() }
      }
      if try mainLoop.run(mode: .default, timeout: nil) == .finished { break }
    } while state.withLock({ $0.shutdownReason == nil })
    shutdownStep.withLock { $0 = "stopping and joining the workers" }
    watchForASecondSignal()

    // Graceful shutdown: workers first (their loops stop from their own threads), then the
    // main loop's sources, then the sinks, which write out what they have queued.
    let deadline = ContinuousClock.now + .seconds(2)
    for worker in workers {
      let port = state.withLock { $0.checkedIn[worker.name] }
      if let port {
        try? port.send(msgid: DemoJob.MessageID.quit, before: deadline)
      } else {
        worker.requestQuit()
      }
    }
    var joinFailures = 0
    // Bounded: a worker whose wake-up was lost (its eventfd write failed) would keep a join
    // waiting for ever. One still running at the bound is left to the process's exit.
    let joinDeadline = deadline + .seconds(3)
    for worker in workers {
      while worker.thread.state != .finished, ContinuousClock.now < joinDeadline {
        usleep(5_000)
      }
      guard worker.thread.state == .finished else {
        joinFailures += 1
        StandardStreams.error(
          "runloop-demo: \(worker.name) did not stop within 5 s of the shutdown (its wake-up "
            + "lost?); leaving it to the process's exit")
        continue
      }
      do { try worker.thread.join() } catch {
        joinFailures += 1
        StandardStreams.error("runloop-demo: \(worker.name) failed: \(error)")
      }
    }
    for timer in extraTimers { timer.invalidate() }
    metricsServer?.endpoint.close()
    debouncer.cancel()
    signals.invalidate()
    progressSource.invalidate()
    mainPort.invalidate()
    // Its last recoveries go through the tracer: closed first.
    watchdog?.close()
    // One bound for all the sinks together: the JSON log, then every loop's journal sink.
    let bound = "\(DurationArgument(options.shutdownTimeout).seconds) s"
    shutdownStep.withLock { $0 = "writing out the logs, within the \(bound) shutdown bound" }
    say(
      "\(stamp()) writing out the logs (within the \(bound) shutdown bound; SIGTERM or SIGINT "
        + "again abandons them)")
    tracer.close(timeout: options.shutdownTimeout)
    shutdownStep.withLock { $0 = "reporting" }
    defer { shutdownOver.store(true, ordering: .releasing) }

    let snapshot = state.withLock { $0 }
    say(
      "shutdown complete (\(snapshot.shutdownReason ?? "main loop finished")): "
        + "\(snapshot.sent) jobs sent, \(snapshot.done) done")
    let rows = summaryRows(mainLoop: mainLoop, metrics: metrics, journal: journal)
    say(SummaryTable.render(rows))
    if let journal, case let unsent = journal.unsent, unsent > 0 {
      StandardStreams.error(
        "runloop-demo: journald did not take \(unsent) trace entries within the "
          + "\(DurationArgument(options.shutdownTimeout).seconds) s shutdown bound (is journald "
          + "stopped?); they are lost (counted in the journald drops column)")
    }
    if let failure = journal?.sinkFailure {
      StandardStreams.error(
        "runloop-demo: no journald sink for \(failure.loops) loop(s) (\(failure.message)); "
          + "their \(failure.entries) trace entries are lost (counted in the journald drops column)"
      )
    }
    // journald is best effort (the exit status stays the JSON log's), but a loss is said.
    if let journal, case let missed = journal.droppedOrFailed, missed > 0 {
      StandardStreams.error(
        "runloop-demo: journald missed \(missed) trace entries (dropped: its queue full or over "
          + "the rate limit, or refused; per loop in the journald drops column)")
    }
    if journal != nil, case let lines = JournalLogHandler.droppedLines, lines > 0 {
      StandardStreams.error("runloop-demo: journald missed \(lines) of the service's log lines")
    }
    let narrationLost = StandardStreams.outputLinesLost.load(ordering: .relaxed)
    if narrationLost > 0 {
      let error = StandardStreams.outputLastError.load(ordering: .relaxed)
      StandardStreams.error(
        "runloop-demo: standard output failed (\(String(cString: strerror(error)))): "
          + "\(narrationLost) lines of narration were lost; the JSON log is the record")
    }
    let statistics = jsonSink.statistics
    guard statistics.isComplete else {
      StandardStreams.error(
        Self.incompleteLogMessage(
          path: options.jsonLogPath, shutdownTimeout: options.shutdownTimeout, statistics))
      say("JSON log INCOMPLETE: \(options.jsonLogPath) (run id \(tracer.runID))")
      return startFailure == nil ? Self.incompleteLogStatus : Self.systemErrorStatus
    }
    say("JSON log written: \(options.jsonLogPath) (run id \(tracer.runID))")
    if startFailure != nil { return Self.systemErrorStatus }
    if narrationLost > 0 { return Self.incompleteLogStatus }
    return joinFailures == 0 ? 0 : 1
  }

  /// Opens the JSON log. A FIFO nobody reads yet is waited for, up to `fifoWait`, with
  /// SIGTERM, SIGINT and SIGHUP still ending the wait (they are blocked for the signalfd,
  /// so the wait looks for them pending).
  private func openJSONLog() throws -> JSONLinesSink {
    let path = options.jsonLogPath
    let deadline = ContinuousClock.now + options.fifoWait
    var told = false
    while true {
      do {
        return try JSONLinesSink(path: path)
      } catch let error where error.code == .alreadyInUse {
        throw error
      } catch let error where error.systemError == ENXIO {
        if let signal = Self.pendingStopSignal() {
          throw DemoError(
            "interrupted by \(Self.signalName(signal)) while waiting for a reader of the FIFO "
              + "'\(path)'; nothing was traced")
        }
        guard ContinuousClock.now < deadline else {
          throw DemoError(
            "cannot write the JSON log at '\(path)': it is a FIFO and no process opened it for "
              + "reading within \(DurationArgument(options.fifoWait).seconds) s (start the "
              + "reader first, or raise --fifo-wait)")
        }
        if !told {
          StandardStreams.error(
            "runloop-demo: '\(path)' is a FIFO nobody reads yet; waiting up to "
              + "\(DurationArgument(options.fifoWait).seconds) s for a reader")
          told = true
        }
        usleep(20_000)
      } catch {
        throw DemoError("cannot write the JSON log at '\(path)': \(error.message)")
      }
    }
  }

  /// What the shutdown would leave undone if it ended now (set in `run()` once the sinks
  /// exist).
  private var abandoned: @Sendable () -> String = { "nothing left to write" }

  /// Once the main loop has stopped, nothing reads its signal source: a thread of its own
  /// takes SIGTERM and SIGINT (blocked in every thread, so they wait for it) until the
  /// shutdown is over, and ends the process at the first.
  private func watchForASecondSignal() {
    let watch = RunLoopThread(name: "shutdown-watch", detached: true) { [self] _ in
      var signals = sigset_t()
      sigemptyset(&signals)
      sigaddset(&signals, SIGTERM)
      sigaddset(&signals, SIGINT)
      var info = siginfo_t()
      var interval = timespec(tv_sec: 0, tv_nsec: 50_000_000)
      while !shutdownOver.load(ordering: .acquiring) {
        let signal = sigtimedwait(&signals, &info, &interval)
        if signal > 0 { abandonShutdown(signal, from: info._sifields._kill.si_pid) }
      }
    }
    do {
      try watch.start()
    } catch {
      StandardStreams.error(
        "runloop-demo: no thread to watch for a second signal (\(error.message)); SIGTERM and "
          + "SIGINT wait until the shutdown is over")
    }
  }

  /// A second SIGTERM or SIGINT during the shutdown: says what is abandoned and exits at
  /// once with 128 + the signal's number (143, 130), as a shell reports a killed program.
  private func abandonShutdown(_ signal: Int32, from sender: pid_t) -> Never {
    let step = shutdownStep.withLock { $0 }
    StandardStreams.error(
      "runloop-demo: \(Self.signalName(signal)) from pid \(sender) during the shutdown (\(step)): "
        + "exiting now with status \(128 + signal); abandoned: \(abandoned())")
    _exit(128 + signal)
  }

  /// SIGTERM, SIGINT or SIGHUP, if one is pending (they are blocked in every thread).
  private static func pendingStopSignal() -> Int32? {
    var pending = sigset_t()
    guard sigpending(&pending) == 0 else { return nil }
    return [SIGTERM, SIGINT, SIGHUP].first { sigismember(&pending, $0) == 1 }
  }

  static func signalName(_ signal: Int32) -> String {
    switch signal {
    case SIGTERM: "SIGTERM"
    case SIGINT: "SIGINT"
    case SIGHUP: "SIGHUP"
    default: "signal \(signal)"
    }
  }

  /// What went wrong with the JSON log at `path`, with the sink's figures (the scenario
  /// command reports its trace with it too).
  static func incompleteLogMessage(
    path: String, shutdownTimeout: Duration, _ statistics: JSONLinesSinkStatistics
  ) -> String {
    var problems: [String] = []
    if statistics.recordsLost > 0 {
      let reason = statistics.lastError.map { String(cString: strerror($0)) } ?? "unknown error"
      problems.append(
        "\(statistics.recordsLost) records lost to \(statistics.writeErrors) failed writes "
          + "(last: \(reason))")
    }
    if statistics.recordsPending > 0 {
      problems.append(
        "\(statistics.recordsPending) records still waiting to be written when the "
          + "\(DurationArgument(shutdownTimeout).seconds) s shutdown bound ran out "
          + "(the file or pipe stopped taking data)")
    }
    if statistics.fileRemoved {
      problems.append("the file was deleted during the run, taking its records with it")
    }
    if statistics.truncations > 0 {
      problems.append(
        "another process truncated it \(statistics.truncations) "
          + "time\(statistics.truncations == 1 ? "" : "s"), taking \(statistics.recordsTruncated) "
          + "records (a copytruncate rotation copied them first, less those written between "
          + "its copy and its truncation; use a rename rotation and SIGHUP to lose none)")
    }
    if statistics.foreignBytes > 0 {
      problems.append(
        "another process wrote \(statistics.foreignBytes) bytes to it: the log is not this "
          + "run's alone")
    }
    return "runloop-demo: the JSON log '\(path)' is incomplete: "
      + "\(statistics.recordsWritten) records written, " + problems.joined(separator: "; ")
  }

  // MARK: - Main-loop call-outs

  private func handle(_ message: LoopPortMessage) {
    switch message.msgid {
    case DemoJob.MessageID.checkIn:
      // Listing 3-13: keep the worker's port (the message's send port) for later.
      guard let port = message.sendPort else { return }
      let name = message.components.first.map { String(decoding: $0, as: UTF8.self) } ?? port.name
      let allIn = state.withLock { state -> Bool in
        state.checkedIn[name] = port
        return state.checkedIn.count == options.workers
      }
      say("\(stamp()) \(name) checked in with port '\(port.name)'")
      if allIn { becameReady() }
    case DemoJob.MessageID.jobDone:
      guard let job = DemoJob(components: message.components) else { return }
      state.withLock { state in
        state.done += 1
        state.doneByChannel[job.channel, default: 0] += 1
      }
      debouncer.call()
    default:
      break
    }
  }

  private func becameReady() {
    state.withLock { $0.ready = true }
    let told = notifier.notify("READY=1\nSTATUS=\(options.workers) workers checked in")
    say(
      "\(stamp()) all \(options.workers) workers checked in"
        + (told ? "; told systemd READY=1" : ""))
  }

  private func heartbeatFired() {
    let (ready, beat) = state.withLock { state -> (Bool, Int) in
      state.heartbeats += 1
      return (state.ready, state.heartbeats)
    }
    guard ready else { return }
    if beat == 2, let injected = options.injectedWorkerStall, let worker = workers.first {
      worker.thread.runLoop.perform(name: "injected stall") {
        usleep(UInt32(clamping: Int(DurationArgument(injected).seconds * 1e6)))
      }
    }
    if beat == 2, let injected = options.injectedStall {
      // Blocks the main loop inside this call-out, for the stall watchdog to see.
      usleep(UInt32(clamping: Int(DurationArgument(injected).seconds * 1e6)))
    }
    let ports = state.withLock { $0.checkedIn }
    var jobs: [(DemoWorker, DemoJob)] = []
    state.withLock { state in
      state.burstStarted = .now
      state.burstSize = workers.count * 2
      for worker in workers {
        for channel in [DemoJob.Channel.commandBuffer, .port] {
          jobs.append((worker, DemoJob(id: state.nextJob, size: 4_000, channel: channel)))
          state.nextJob += 1
          state.sent += 1
        }
      }
    }
    for (worker, job) in jobs {
      switch job.channel {
      case .commandBuffer:
        worker.enqueueCommand(job)
      case .port:
        guard let port = ports[worker.name] else { continue }
        do {
          try port.send(
            msgid: DemoJob.MessageID.job, components: job.components, receivePort: mainPort,
            before: .now + .milliseconds(100))
        } catch {
          say("\(stamp()) could not send job \(job.id) to \(worker.name): \(error)")
        }
      }
    }
    let snapshot = state.withLock { $0 }
    say(
      "\(stamp()) heartbeat \(beat) [\(EventRunLoop.current.currentMode?.name ?? "?")]: "
        + "\(snapshot.sent) jobs sent, \(snapshot.done) done "
        + "(\(snapshot.doneByChannel[.commandBuffer] ?? 0) by command buffer, "
        + "\(snapshot.doneByChannel[.port] ?? 0) by port), "
        + "\(snapshot.progressUpdates) progress updates")
    logger?.info(
      "heartbeat \(beat): \(snapshot.sent) jobs sent, \(snapshot.done) done",
      metadata: ["jobs_sent": "\(snapshot.sent)", "jobs_done": "\(snapshot.done)"])
    // Once, right after handing out a burst: the jobs finish while the loop runs the
    // critical mode, so their low-priority progress signals wait.
    if beat == 1 { criticalSection(on: .current) }
  }

  private func burstSettled() {
    let (size, started) = state.withLock { ($0.burstSize, $0.burstStarted) }
    guard let started else { return }
    let elapsed = ContinuousClock.now - started
    say(
      "\(stamp()) debounce: burst of \(size) jobs settled \(milliseconds(elapsed)) after it began")
  }

  private func progressRan() {
    let updates = progressPending.exchange(0, ordering: .acquiringAndReleasing)
    let held = state.withLock { state -> Int? in
      state.progressUpdates += updates
      defer { state.heldAtCriticalExit = nil }
      return state.heldAtCriticalExit
    }
    if let held {
      say(
        "\(stamp()) back in 'default': the low-priority 'progress' source ran and took "
          + "\(updates) updates (\(held) had waited through the critical section)")
    }
  }

  private func criticalSection(on loop: EventRunLoop) {
    let length: Duration = .milliseconds(400)
    say(
      "\(stamp()) entering the critical section: a nested run in mode 'critical' for "
        + "\(milliseconds(length)); 'progress' (default mode only) is held")
    let result = try? loop.run(mode: Self.critical, timeout: length)
    let held = progressPending.load(ordering: .acquiring)
    state.withLock { $0.heldAtCriticalExit = held }
    say(
      "\(stamp()) left the critical section (\(result?.description ?? "error")): "
        + "\(held) progress updates were held")
    if state.withLock({ $0.shutdownReason != nil }) { loop.stop() }
  }

  /// Starts a graceful shutdown: tells systemd, stops the main loop (and an enclosing run
  /// too once a nested run returns, see ``criticalSection(on:)``).
  private func requestShutdown(_ reason: String) {
    let first = state.withLock { state -> Bool in
      guard state.shutdownReason == nil else { return false }
      state.shutdownReason = reason
      return true
    }
    guard first else { return }
    notifier.notify("STOPPING=1\nSTATUS=stopping: \(reason)")
    say("\(stamp()) shutting down: \(reason)")
    EventRunLoop.main.stop()
  }

  // MARK: - Called from workers

  func register(worker: DemoWorker, mode: LoopMode) {
    state.withLock { _ = $0.registered.insert(worker.name) }
    say("\(stamp()) \(worker.name) registered its command source (mode '\(mode)')")
  }

  func jobFinished(_ job: DemoJob, result: Int, by worker: DemoWorker) {
    progressPending.add(1, ordering: .releasing)
    progressSource.signalAndWakeUp()
    try? mainPort.send(
      msgid: DemoJob.MessageID.jobDone, components: job.components, before: .now + .seconds(1))
  }

  // MARK: - Output

  private func summaryRows(mainLoop: EventRunLoop, metrics: LoopMetrics, journal: PerLoopJournal?)
    -> [SummaryTable.Row]
  {
    var loops: [(UInt64, String)] = [(mainLoop.id, "main")]
    for worker in workers { loops.append((worker.thread.runLoop.id, worker.name)) }
    return loops.map { id, name in
      let snapshot = metrics.snapshot(ofLoopID: id)
      let journalDrops: String
      if let journal {
        journalDrops = "\(journal.drops(ofLoop: id))"
      } else {
        journalDrops = "-"
      }
      return SummaryTable.Row(
        loop: id, thread: name, snapshot: snapshot, journalDrops: journalDrops)
    }
  }

  private func stamp() -> String {
    let hundredths = Int((DurationArgument(ContinuousClock.now - started).seconds * 100).rounded())
    let whole = String(hundredths / 100).leftPadded(to: 3, with: " ")
    let fraction = String(hundredths % 100).leftPadded(to: 2, with: "0")
    return "[\(whole).\(fraction)s]"
  }

  /// Narrates on standard output; a reader gone (EPIPE) ends the run as SIGTERM does.
  private func say(_ text: String) {
    guard !StandardStreams.out(text), state.withLock({ $0.shutdownReason == nil }) else { return }
    requestShutdown("standard output closed (its reader went away)")
  }
}
