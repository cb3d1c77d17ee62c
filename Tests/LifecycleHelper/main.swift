// A service program for the lifecycle tests: a ServiceGroup of a loop group and an echo
// server on a Unix socket (the path is the first argument), shut down by SIGTERM. It prints
// "ready" once it listens, a line for each SIGUSR1 (read by a SignalSource on one of the
// loops) and, after the group has ended, what it served.
import Glibc
import Logging
import RunLoopCore
import RunLoopLifecycle
import RunLoopPorts
import ServiceLifecycle

guard CommandLine.arguments.count == 2 else {
  say("usage: RunLoopLifecycleHelper SOCKET-PATH")
  exit(64)
}
let loops = try LoopGroupService(threadCount: 4, name: "echo-loop")
// A source for SIGUSR1 beside the group's own SIGTERM handling (a Dispatch signal source,
// installed when the group's run starts): each signal reaches its own receiver.
let usr1 = try SignalSource(signals: [SIGUSR1]) { received in
  say("usr1 from \(received.senderPID)")
}
try usr1.add(to: loops.group.next(), mode: .default)
let echo = EchoService(loop: loops.group.next(), path: CommandLine.arguments[1])
var logger = Logger(label: "lifecycle-helper")
logger.logLevel = .critical
let services = ServiceGroup(
  services: [loops, echo], gracefulShutdownSignals: [.sigterm], logger: logger)
try await services.run()
usr1.invalidate()
let counts = echo.counts
say(
  "served connections=\(counts.connections) in=\(counts.bytesIn) out=\(counts.bytesOut)"
    + " abandoned=\(loops.group.abandonedPerformRequests)"
    + " threads-ended=\(loops.group.threads.allSatisfy { $0.state == .finished })")
