// The Ports module's part of the test helper: subcommands that play the other process in
// the cross-process port tests. Each prints "ready" (flushed) once it is set up.
import Dispatch
import Glibc
import RunLoopCore
import RunLoopPorts
import Synchronization

/// Message ids the helper's servers understand.
enum PortsHelperMessage {
  static let echo: Int32 = 1
  static let dieMidRequest: Int32 = 2
  static let quit: Int32 = 3
  static let checkIn: Int32 = 100
  static let square: Int32 = 200
}

/// Runs a `ports-*` subcommand and exits.
func runPortsHelper(_ arguments: [String]) -> Never {
  do {
    switch arguments.first {
    case "ports-echo" where arguments.count == 3 || arguments.count == 4:
      try echoServer(
        directory: arguments[1], name: arguments[2],
        maxFrameVersion: arguments.count == 4 ? Int(arguments[3]) ?? 0 : 2)
    case "ports-request" where arguments.count == 5 || arguments.count == 6:
      try request(
        directory: arguments[1], name: arguments[2], msgid: Int32(arguments[3]) ?? 0,
        text: arguments[4], frameVersion: arguments.count == 6 ? Int(arguments[5]) ?? 0 : 2)
    case "ports-traced-request" where arguments.count == 3:
      try tracedRequest(directory: arguments[1], name: arguments[2])
    case "ports-checkin" where arguments.count == 3:
      try checkInWorker(directory: arguments[1], mainName: arguments[2])
    case "ports-signals" where arguments.count == 1:
      try signalWaiter()
    case "ports-signals-unblocked" where arguments.count == 1:
      try signalsWhateverTheMasks()
    case "ports-signals-dispatch" where arguments.count == 1:
      try signalsBesideDispatch()
    case "ports-emfile" where arguments.count == 2:
      try acceptWithoutDescriptors(directory: arguments[1])
    case "ports-request-timed" where arguments.count == 4:
      try timedRequest(
        directory: arguments[1], name: arguments[2], milliseconds: Int(arguments[3]) ?? 0)
    default:
      say(
        "usage: ports-echo DIR NAME [MAX-FRAME-VERSION]"
          + " | ports-request DIR NAME MSGID TEXT [FRAME-VERSION]"
          + " | ports-traced-request DIR NAME | ports-checkin DIR MAIN | ports-signals"
          + " | ports-signals-unblocked | ports-signals-dispatch | ports-emfile DIR"
          + " | ports-request-timed DIR NAME MILLISECONDS")
      exit(2)
    }
  } catch {
    say("error:\(error.code)")
    exit(1)
  }
  exit(0)
}

/// Writes a line to standard output at once (unbuffered, so the test reads it in time).
private func say(_ line: String) {
  let bytes = Array((line + "\n").utf8)
  _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// A server that echoes, dies mid-request, or quits on request; with `maxFrameVersion` 1 it
/// reads frames as a server from before trace contexts.
private func echoServer(directory: String, name: String, maxFrameVersion: Int)
  throws(RunLoopError)
{
  let registry = try PortNameRegistry(directory: directory)
  let server = try NamedPortServer(
    name: name, registry: registry, maxFrameVersion: maxFrameVersion
  ) { message in
    switch message.msgid {
    case PortsHelperMessage.dieMidRequest:
      _exit(3)
    case PortsHelperMessage.quit:
      EventRunLoop.current.stop()
      return Array("bye".utf8)
    default:
      return message.data
    }
  }
  try server.add(to: .current, mode: .default)
  say("ready \(server.reclaimedStaleSocket ? "reclaimed" : "fresh")")
  _ = try EventRunLoop.current.run()
  server.invalidate()
}

/// One request in frames of `frameVersion`; prints the reply or the error code.
private func request(
  directory: String, name: String, msgid: Int32, text: String, frameVersion: Int
) throws(RunLoopError) {
  let registry = try PortNameRegistry(directory: directory)
  let port = try NamedPort(name: name, registry: registry, frameVersion: frameVersion)
  let reply = try port.request(
    msgid: msgid, data: Array(text.utf8), sendTimeout: .seconds(2), receiveTimeout: .seconds(5))
  say("reply:\(String(decoding: reply, as: UTF8.self))")
}

/// Keeps the call-out records of the loops it is attached to.
private final class CalloutRecords: RunLoopInstrument, Sendable {
  let interests: InstrumentInterests = .callouts
  private let recorded = GuardedState<[CalloutRecord]>([])
  var records: [CalloutRecord] { recorded.withLock { $0 } }

  func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo) {
    recorded.withLock { $0.append(callout) }
  }
}

/// One request made from a traced call-out (a perform block named `send`) on this thread's
/// loop; prints `send:SPAN trace:TRACE` (the block's span and the trace id it sent) and
/// `reply:NAME cause:SPAN pid:PID trace:TRACE` (the call-out that reported the reply and
/// its cause), spans as 16 hex digits and the trace as 32.
private func tracedRequest(directory: String, name: String) throws(RunLoopError) {
  let registry = try PortNameRegistry(directory: directory)
  let port = try NamedPort(name: name, registry: registry)
  let records = CalloutRecords()
  let loop = EventRunLoop.current
  loop.addInstrument(records)
  let outcome = GuardedState<RunLoopError?>(nil)
  loop.perform(name: "send") {
    do throws(RunLoopError) {
      _ = try port.request(msgid: 1, data: Array("traced".utf8))
    } catch {
      outcome.withLock { $0 = error }
    }
  }
  _ = try loop.run(mode: .default, timeout: .zero)
  loop.removeInstrument(records)
  if let error = outcome.withLock({ $0 }) { throw error }
  let all = records.records
  guard let send = all.first(where: { $0.name == "send" }),
    let reply = all.first(where: { $0.name == "\(name).reply" }), let cause = reply.cause
  else {
    say("missing: \(all.map(\.name))")
    exit(1)
  }
  say("send:\(hex(send.span)) trace:\(traceHex(cause.traceID))")
  say(
    "reply:\(reply.name) cause:\(hex(cause.span)) pid:\(cause.processID ?? 0)"
      + " trace:\(traceHex(cause.traceID))")
}

private func hex(_ value: UInt64) -> String {
  let digits = String(value, radix: 16)
  return String(repeating: "0", count: 16 - digits.count) + digits
}

private func traceHex(_ trace: (high: UInt64, low: UInt64)?) -> String {
  trace.map { hex($0.high) + hex($0.low) } ?? "none"
}

/// One request with a receive timeout of `milliseconds`; prints how it ended, how long it
/// took and how much the peak resident memory grew while it ran, for tests against a
/// hostile server.
private func timedRequest(directory: String, name: String, milliseconds: Int)
  throws(RunLoopError)
{
  let registry = try PortNameRegistry(directory: directory)
  let port = try NamedPort(name: name, registry: registry)
  let before = peakResidentKilobytes()
  let start = ContinuousClock.now
  let outcome: String
  do {
    let reply = try port.request(msgid: 1, data: [1], receiveTimeout: .milliseconds(milliseconds))
    outcome = "reply:\(reply.count)"
  } catch {
    outcome = "error:\(error.code)"
  }
  let elapsed = ContinuousClock.now - start
  let elapsedMilliseconds =
    elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
  say("\(outcome) elapsed-ms:\(elapsedMilliseconds) growth-kb:\(peakResidentKilobytes() - before)")
}

private func peakResidentKilobytes() -> Int {
  var usage = rusage()
  getrusage(RUSAGE_SELF.rawValue, &usage)
  return usage.ru_maxrss
}

/// The guide's Listing 3-19 as a process: look up the main port by name, register a port of
/// our own, check in with its name, then serve requests until told to quit.
private func checkInWorker(directory: String, mainName: String) throws(RunLoopError) {
  let registry = try PortNameRegistry(directory: directory)
  let mainPort = try NamedPort(name: mainName, registry: registry)
  let myName = "com.myapp.thread-\(getpid())"
  let myPort = try NamedPortServer(name: myName, registry: registry) { message in
    switch message.msgid {
    case PortsHelperMessage.square:
      let value = Int(String(decoding: message.data, as: UTF8.self)) ?? 0
      return Array(String(value * value).utf8)
    case PortsHelperMessage.quit:
      EventRunLoop.current.stop()
      return nil
    default:
      return nil
    }
  }
  try myPort.add(to: .current, mode: .default)
  try mainPort.send(msgid: PortsHelperMessage.checkIn, data: Array(myName.utf8))
  say("ready")
  _ = try EventRunLoop.current.run()
  myPort.invalidate()
}

/// Blocks SIGTERM and SIGHUP before any thread exists, then reads them from a signal source.
private func signalWaiter() throws(RunLoopError) {
  try SignalSource.block([SIGTERM, SIGHUP])
  let source = try SignalSource(signals: [SIGTERM, SIGHUP]) { received in
    if received.signal == SIGHUP {
      say("hup from \(received.senderPID)")
    } else {
      say("term from \(received.senderPID)")
      EventRunLoop.current.stop()
    }
  }
  try source.add(to: .current, mode: .default)
  say("ready")
  _ = try EventRunLoop.current.run()
}

/// Never blocks a signal: four loop threads and Swift concurrency tasks run while another
/// process sends SIGUSR1 and SIGTERM, which a source on one of the loops reads. Prints the
/// kernel ids of the threads that can take a signal (the main thread and the loops' threads)
/// and "ready", then a line per signal; SIGTERM ends it with status 0.
private func signalsWhateverTheMasks() throws(RunLoopError) {
  let group = try RunLoopGroup(threadCount: 4, name: "signal-loop")
  let flags = TaskFlags()
  // Tasks on the concurrency pool, so that its threads exist and work when the signals come.
  for _ in 0..<4 {
    Task.detached {
      flags.started.add(1, ordering: .relaxed)
      while flags.running.load(ordering: .relaxed) {
        try? await Task.sleep(for: .milliseconds(2))
      }
    }
  }
  while flags.started.load(ordering: .relaxed) < 4 { usleep(1_000) }
  let source = try SignalSource(signals: [SIGUSR1, SIGTERM]) { received in
    if received.signal == SIGUSR1 {
      say("usr1 from \(received.senderPID)")
    } else {
      say("term from \(received.senderPID)")
      EventRunLoop.main.stop()
    }
  }
  try source.add(to: group.loops[0], mode: .default)
  let ids = [EventRunLoop.main.threadID] + group.loops.map(\.threadID)
  say("threads " + ids.map(String.init).joined(separator: " "))
  say("ready")
  try EventRunLoop.main.runUntilStopped()
  flags.running.store(false, ordering: .relaxed)
  source.invalidate()
  group.stop()
  for thread in group.threads { try thread.join() }
}

/// Whether the helper's tasks should go on, and how many have started.
private final class TaskFlags: Sendable {
  let running = Atomic<Bool>(true)
  let started = Atomic<Int>(0)
}

/// A SignalSource for SIGUSR1 and, made after it, a Dispatch signal source for SIGTERM (what
/// swift-service-lifecycle's ServiceGroup makes for its graceful-shutdown signals), with no
/// signal blocked: each SIGUSR1 reaches the source and SIGTERM reaches Dispatch, which ends
/// the process with status 0.
private func signalsBesideDispatch() throws(RunLoopError) {
  let source = try SignalSource(signals: [SIGUSR1]) { received in
    say("source usr1 from \(received.senderPID)")
  }
  try source.add(to: .current, mode: .default)
  let registered = DispatchSemaphore(value: 0)
  let dispatchSource = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
  dispatchSource.setEventHandler {
    say("dispatch term")
    EventRunLoop.main.stop()
  }
  dispatchSource.setRegistrationHandler { registered.signal() }
  dispatchSource.resume()
  registered.wait()
  say("ready")
  try EventRunLoop.current.runUntilStopped()
  source.invalidate()
  dispatchSource.cancel()
}

/// A server whose `accept` fails with EMFILE: every descriptor but one is used up, a client
/// connects (using the last one), and the loop runs for half a second. Prints the CPU time
/// that took, then frees the descriptors and prints whether the pending connection was
/// accepted after all. In its own process: the descriptor limit is process-wide.
private func acceptWithoutDescriptors(directory: String) throws(RunLoopError) {
  let registry = try PortNameRegistry(directory: directory)
  let server = try NamedPortServer(name: "full", registry: registry) { _ in nil }
  try server.add(to: .current, mode: .default)
  let loop = EventRunLoop.current
  // The first run sets up what the loop itself needs descriptors for (the main queue's).
  _ = try loop.run(mode: .default, timeout: .milliseconds(10))
  var saved = rlimit()
  getrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)
  var highest: Int32 = 0
  for candidate in Int32(0)..<4096 where fcntl(candidate, F_GETFD) != -1 { highest = candidate }
  var limit = saved
  limit.rlim_cur = rlim_t(highest + 8)
  setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
  var hogs: [Int32] = []
  while true {
    let descriptor = dup(1)
    if descriptor < 0 { break }
    hogs.append(descriptor)
  }
  close(hogs.removeLast())
  let client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
  var address = sockaddr_un()
  address.sun_family = sa_family_t(AF_UNIX)
  let path = Array(registry.socketPath(for: "full").utf8) + [0]
  withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(client, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
    }
  }
  let before = cpuMicroseconds()
  _ = try loop.run(mode: .default, timeout: .milliseconds(500))
  let cpu = cpuMicroseconds() - before
  for descriptor in hogs { close(descriptor) }
  setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)
  let deadline = ContinuousClock.now + .seconds(5)
  while server.connectionCount == 0, ContinuousClock.now < deadline {
    _ = try loop.run(mode: .default, timeout: .milliseconds(50))
  }
  say(
    "connect:\(connected) cpu-ms:\(cpu / 1000) pauses:\(server.statistics.acceptPauses)"
      + " accepted:\(server.connectionCount)")
  close(client)
  server.invalidate()
}

private func cpuMicroseconds() -> Int {
  var usage = rusage()
  getrusage(RUSAGE_SELF.rawValue, &usage)
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000
    + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec
}
