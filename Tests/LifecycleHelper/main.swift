// A service program for the lifecycle tests: a ServiceGroup of a loop group and an echo
// server on a Unix socket (the path is the first argument), shut down by SIGTERM. It prints
// "ready" once it listens and, after the group has ended, what it served.
import Glibc
import Logging
import RunLoopCore
import RunLoopLifecycle
import ServiceLifecycle

guard CommandLine.arguments.count == 2 else {
  say("usage: RunLoopLifecycleHelper SOCKET-PATH")
  exit(64)
}
let loops = try LoopGroupService(threadCount: 4, name: "echo-loop")
let echo = EchoService(loop: loops.group.next(), path: CommandLine.arguments[1])
var logger = Logger(label: "lifecycle-helper")
logger.logLevel = .critical
let services = ServiceGroup(
  services: [loops, echo], gracefulShutdownSignals: [.sigterm], logger: logger)
try await services.run()
let counts = echo.counts
say(
  "served connections=\(counts.connections) in=\(counts.bytesIn) out=\(counts.bytesOut)"
    + " abandoned=\(loops.group.abandonedPerformRequests)"
    + " threads-ended=\(loops.group.threads.allSatisfy { $0.state == .finished })")
