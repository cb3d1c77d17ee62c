// runloop-snippets: runs one region of Docs/Snippets, the code of the guide's articles, as a
// process of its own, so that SnippetRunTests can run every block an article shows and
// compare what it prints with what the article says it prints.
//
//   runloop-snippets --list    every region: "NAME runs", or how it is covered and why
//   runloop-snippets NAME      runs the region's function (exit 0 when it returned)

import Dispatch
import Glibc
import RunLoopCore
import RunLoopGuide
import RunLoopTracing

/// How the runner covers a region of Docs/Snippets.
enum Coverage {
  /// Run as it is, on this process's main thread.
  case runs(() throws -> Void)
  /// Declarations that another region's run uses.
  case runBy(String)
  /// Compiled, not run, for the reason given.
  case compiledOnly(String)
}

/// A worker thread whose loop runs in `mode` until the body is done, for the regions that
/// take a worker's loop.
func withWorker(mode: LoopMode = .default, _ body: (EventRunLoop) throws -> Void) throws {
  let worker = RunLoopThread(name: "worker") { thread in
    try thread.runLoop.add(CustomInputSource(name: "keep-alive") {}, mode: mode)
    while !thread.isCancelled {
      try thread.runLoop.run(mode: mode, timeout: .milliseconds(100))
    }
  }
  try worker.start()
  defer {
    worker.cancel()
    try? worker.join()
  }
  try body(worker.runLoop)
}

/// Runs `body` as a secondary thread's main routine, for the regions written as one: the
/// main thread's loop never runs out of things to watch (it watches the main queue), so a
/// run there that waits for "nothing left" would never return.
func onAThreadOfItsOwn(_ body: @escaping @Sendable () throws -> Void) throws {
  let thread = RunLoopThread(name: "snippet") { _ in try body() }
  try thread.start()
  try thread.join()
}

/// Runs an async region in a task and waits for it on this thread, which no task needs.
func waitFor(
  cancelAfter limit: Duration? = nil, _ body: @escaping @Sendable () async throws -> Void
)
  throws
{
  let failure = GuardedState<(any Error)?>(nil)
  let done = DispatchSemaphore(value: 0)
  let task = Task {
    do { try await body() } catch { failure.withLock { $0 = error } }
    done.signal()
  }
  if let limit {
    if done.wait(timeout: .now() + .milliseconds(Int(limit / .milliseconds(1)))) == .timedOut {
      task.cancel()
      done.wait()
    }
  } else {
    done.wait()
  }
  if let error = failure.withLock({ $0 }) { throw error }
}

/// A pipe with one byte written: its read end is readable.
func readablePipe() -> Int32 {
  var ends: [Int32] = [0, 0]
  _ = pipe(&ends)
  var byte: UInt8 = 1
  _ = write(ends[1], &byte, 1)
  return ends[0]
}

/// Sends SIGTERM to this process after `delay`, from a process of its own (the region blocks
/// the signal before any thread of ours exists).
func terminateLater(after delay: String) {
  var child: pid_t = 0
  let argv = ["/bin/sh", "-c", "sleep \(delay); kill -TERM \(getpid())"]
  var cArgs = argv.map { strdup($0) } + [nil]
  _ = posix_spawn(&child, "/bin/sh", nil, nil, &cArgs, environ)
  for pointer in cArgs { free(pointer) }
}

/// Writes `text` to standard error.
func complain(_ text: String) {
  _ = text.withCString { write(2, $0, strlen($0)) }
}

let twoProcesses = "needs a second process; `runloop-demo scenario named-ports` runs the protocol"

let regions: [(name: String, coverage: Coverage)] = [
  ("anatomy-worker", .runs(anatomyExample)),
  ("anatomy-result", .runs(anatomyResultExample)),
  ("custom-source", .runs(customSourceExample)),
  (
    "signal-and-wake",
    .runs {
      let loop = EventRunLoop.current
      let source = CustomInputSource(name: "jobs") { print("performed") }
      try loop.add(source, mode: .default)
      wakeExample(source: source, loop: loop)
      try loop.run(mode: .default, timeout: .zero)
    }
  ),
  (
    "descriptor-watch",
    .runs {
      try descriptorWatchExample(pipeReadEnd: readablePipe())
      try EventRunLoop.current.run(mode: .default, timeout: .zero)
    }
  ),
  ("command-buffer-types", .runBy("command-buffer-use")),
  ("command-buffer-use", .runs(commandBufferExample)),
  ("performance-spin", .runs(performanceSpinExample)),
  ("ports-descriptor", .runs(portsDescriptorExample)),
  (
    "ports-signals",
    .runs {
      terminateLater(after: "0.3")
      try portsSignalsExample()
    }
  ),
  ("ports-in-process", .runs(portsInProcessExample)),
  ("ports-check-in-threads", .runs(portsCheckInThreadsExample)),
  ("ports-named", .compiledOnly("the server's run never returns; " + twoProcesses)),
  ("ports-registry", .compiledOnly("needs two users and a shared /srv/svc/ports")),
  ("ports-check-in-processes", .compiledOnly(twoProcesses)),
  ("ports-sockets", .runs(portsSocketsExample)),
  ("modes-held", .runs(modesHeldExample)),
  ("modes-common", .runs(modesCommonExample)),
  ("modes-nested", .runs(modesNestedExample)),
  ("observers-listing", .runs(observersListingExample)),
  ("observers-options", .runs { observerOptionsExample(loop: .current) }),
  (
    "concurrency-sync-async",
    .runs {
      try withWorker { worker in
        try waitFor { try await concurrencySyncAsyncExample(worker: worker) }
      }
    }
  ),
  ("concurrency-serial-queue", .runs(concurrencySerialQueueExample)),
  (
    "concurrency-own-thread",
    .runs {
      try withWorker { worker in
        try concurrencyOwnThreadExample(worker: worker)
        try worker.performAndWait {}
      }
    }
  ),
  (
    "concurrency-delay",
    .runs {
      try withWorker { worker in try waitFor { try await concurrencyDelayExample(worker: worker) } }
    }
  ),
  (
    "concurrency-ticks",
    .runs {
      // The sequence never ends by itself: the task is cancelled after two ticks' time.
      try withWorker { worker in
        try waitFor(cancelAfter: .milliseconds(2_500)) {
          await concurrencyTicksExample(loop: worker)
        }
      }
    }
  ),
  ("concurrency-suspend", .runs { try concurrencySuspendExample(loop: .current) }),
  ("concurrency-actor", .runBy("concurrency-actor-use")),
  (
    "concurrency-actor-use",
    .runs {
      try withWorker { worker in try waitFor { try await concurrencyActorExample(worker: worker) } }
    }
  ),
  (
    "concurrency-modes",
    .runs {
      try withWorker(mode: "tracking") { loop in
        try waitFor { await concurrencyModesExample(loop: loop) }
      }
    }
  ),
  (
    "concurrency-sequences",
    .runs {
      let pipe = readablePipe()
      try withWorker { worker in
        try waitFor { try await concurrencySequencesExample(worker: worker, pipeReadEnd: pipe) }
      }
    }
  ),
  (
    "concurrency-named-port-requests",
    .runs {
      try withWorker { worker in
        try waitFor { try await concurrencyNamedPortRequestsExample(worker: worker) }
      }
    }
  ),
  ("concurrency-main", .runs(mainLoopProgram)),
  ("tracing-attach", .runs(tracingAttachExample)),
  ("tracing-spans", .runs { try withWorker { try tracingSpansExample(worker: $0) } }),
  ("tracing-per-request", .runs(tracingPerRequestExample)),
  (
    "tracing-prometheus",
    .compiledOnly(
      "binds 127.0.0.1:9464 and serves for ever; PrometheusScrapeTests runs the same endpoint"
        + " against a real Prometheus")
  ),
  (
    "tracing-logging",
    .runs {
      let worker = RunLoopThread(name: "worker") { thread in
        try thread.runLoop.add(CustomInputSource(name: "keep-alive") {}, mode: .default)
        try thread.runLoop.run()
      }
      try worker.start()
      try tracingLoggingExample(worker: worker)
      try worker.runLoop.performAndWait {}
      worker.runLoop.stop()
      try worker.join()
    }
  ),
  (
    "tracing-watchdog",
    .runs {
      let tracer = LoopTracer(sinks: [])
      tracingWatchdogExample(tracer: tracer)
      tracer.close()
    }
  ),
  (
    "tracing-metrics",
    .runs {
      let worker = RunLoopThread(name: "worker") { thread in
        try thread.runLoop.add(CustomInputSource(name: "keep-alive") {}, mode: .default)
        try thread.runLoop.run()
      }
      try worker.start()
      try worker.runLoop.performAndWait {}
      tracingMetricsExample(worker: worker)
      worker.runLoop.stop()
      try worker.join()
    }
  ),
  (
    "tracing-pictures",
    .runs {
      // The region reads /tmp/loop.jsonl: write one, of a short run of this thread's loop.
      let tracer = LoopTracer(sinks: [try JSONLinesSink(path: "/tmp/loop.jsonl")])
      tracer.attach(to: .current)
      let source = CustomInputSource(name: "work") {}
      try EventRunLoop.current.add(source, mode: .default)
      source.signal()
      try EventRunLoop.current.run(mode: .default, timeout: .zero)
      tracer.close()
      try tracingPicturesExample()
    }
  ),
  ("sequence-watch", .runs(sequenceWatchExample)),
  ("sequence-empty", .runs(sequenceEmptyExample)),
  ("sequence-one-source", .runs(sequenceOneSourceExample)),
  ("thread-attributes", .runs(threadAttributesExample)),
  ("thread-errors", .runs(threadErrorExample)),
  ("thread-dictionary", .runs(threadDictionaryExample)),
  ("thread-exit-pattern", .runs(exitPatternExample)),
  ("thread-shared-state", .runs(sharedStateExample)),
  ("using-get", .runs(getLoopsExample)),
  ("using-skeleton", .runs { try onAThreadOfItsOwn(skeletonThreadMain) }),
  ("using-run-variants", .runs { try onAThreadOfItsOwn(runVariantsExample) }),
  ("using-perform", .runs(performExample)),
  ("using-main", .runs(mainLoopExample)),
  ("using-wait-for-main", .runs(waitForMainExample)),
  ("when-no-loop", .runs(noRunLoopExample)),
  ("when-periodic-worker", .runs(periodicWorkerExample)),
  ("module-core", .runs(moduleCoreExample)),
  ("module-timers", .runs { try onAThreadOfItsOwn(moduleTimersExample) }),
  ("module-observers", .runs { try onAThreadOfItsOwn(moduleObserversExample) }),
  (
    "module-logging",
    .runs {
      let worker = RunLoopThread(name: "worker") { thread in try thread.runLoop.runUntilStopped() }
      try worker.start()
      let tracer = try moduleLoggingExample(worker: worker)
      worker.stop()
      try worker.join()
      tracer.close()
    }
  ),
  (
    "module-lifecycle",
    .runs {
      terminateLater(after: "0.5")
      try waitFor { try await moduleLifecycleExample() }
    }
  ),
]

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments == ["--list"] {
  for (name, coverage) in regions {
    switch coverage {
    case .runs: print("\(name)\truns")
    case .runBy(let other): print("\(name)\trun by \(other)")
    case .compiledOnly(let reason): print("\(name)\tcompiled only: \(reason)")
    }
  }
  exit(0)
}
guard arguments.count == 1, let region = regions.first(where: { $0.name == arguments[0] }) else {
  complain("usage: runloop-snippets --list | NAME   (NAME from --list)\n")
  exit(2)
}
guard case .runs(let body) = region.coverage else {
  complain("runloop-snippets: '\(region.name)' is not run by itself (see --list)\n")
  exit(2)
}
do {
  try body()
} catch {
  complain("runloop-snippets: '\(region.name)' threw \(error)\n")
  exit(1)
}
