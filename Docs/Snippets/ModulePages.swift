import Logging
import RunLoopCore
import RunLoopLifecycle
import RunLoopLogging
import RunLoopObservers
import RunLoopTimers
import RunLoopTracing
import ServiceLifecycle

// The first examples of the module pages (Sources/*/RunLoop*.docc) that no article shows.

package func moduleCoreExample() throws {
  // snippet: module-core
  let worker = RunLoopThread(name: "worker") { thread in
    try thread.runLoop.runUntilStopped()
  }
  try worker.start()
  worker.runLoop.perform(name: "greet") {
    print("hello from", RunLoopThread.current?.name ?? "?")
  }
  worker.stop()  // after the perform request already queued
  try worker.join()
  // end snippet
}

package func moduleTimersExample() throws {
  // snippet: module-timers
  let loop = EventRunLoop.current
  let tick = try LoopTimer(fireAt: .now, every: .milliseconds(100), name: "tick") { _ in
    print("tick")
  }
  try loop.add(tick, mode: .default)
  try loop.run(until: .now + .milliseconds(350))  // ticks at 0, 100, 200 and 300 ms
  tick.invalidate()
  // end snippet
}

package func moduleObserversExample() throws {
  // snippet: module-observers
  let loop = EventRunLoop.current
  let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in
    print("loop:", activity)
  }
  loop.add(observer, mode: .default)
  let metrics = LoopMetrics()
  metrics.attach(to: loop)
  let idle = CustomInputSource(name: "idle") {}  // an empty mode's run would return at once
  try loop.add(idle, mode: .default)
  try loop.run(mode: .default, timeout: .milliseconds(50))  // one pass, asleep for 50 ms
  if let snapshot = metrics.snapshot(of: loop) { print("passes:", snapshot.iterations) }
  // end snippet
  idle.invalidate()
}

package func moduleLoggingExample(worker: RunLoopThread) throws -> LoopTracer {
  // snippet: module-logging
  LoggingSystem.bootstrap(
    { StreamLogHandler.standardOutput(label: $0, metadataProvider: $1) },
    metadataProvider: .runLoop())
  let tracer = LoopTracer(sinks: [try JSONLinesSink(path: "/tmp/jobs.jsonl")])
  tracer.attach(to: worker.runLoop)
  let logger = Logger(label: "jobs")
  // The line carries runloop_loop, runloop_callout_name=job-42, runloop_span, ...: the values
  // of the call-out's own record in /tmp/jobs.jsonl.
  worker.runLoop.perform(name: "job-42") { logger.info("job done") }
  // end snippet
  return tracer
}

package func moduleLifecycleExample() async throws {
  // snippet: module-lifecycle
  let worker = try LoopThreadService(name: "worker")
  let group = ServiceGroup(
    services: [worker], gracefulShutdownSignals: [.sigterm, .sigint],
    logger: Logger(label: "service"))
  worker.loop.perform(name: "hello") { print("on the worker's loop") }
  // On SIGTERM: the work already queued runs, the thread ends, and run() returns.
  try await group.run()
  // end snippet
}
