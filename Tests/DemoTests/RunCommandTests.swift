import Foundation
import Glibc
import RunLoopCore
import RunLoopObservers
import Testing

@Suite("runloop-demo run")
struct RunCommandTests {
  @Test func runForThreeSecondsExitsZeroWithACompleteLogAndASummaryPerLoop() throws {
    let directory = try scratchDirectory("run3")
    let result = try runDemo(["run", "--duration", "3", "--no-journal"], directory: directory)
    #expect(result.exitedNormally && result.status == 0, "stderr: \(result.stderr)")
    #expect(result.stdout.contains("all 2 workers checked in"))
    #expect(result.stdout.contains("entering the critical section"))
    #expect(result.stdout.contains("shutting down: --duration elapsed"))
    // The summary table: a header and one row per loop.
    #expect(result.stdout.contains("iterations  asleep  call-outs"))
    for thread in ["main", "worker-1", "worker-2"] {
      #expect(
        result.stdout.split(separator: "\n").contains {
          $0.split(separator: " ").dropFirst().first == Substring(thread)
        })
    }
    let log = try LogCheck(path: directory + "/runloop-trace.jsonl")
    #expect(log.loops.count == 3)
    #expect(log.problems() == [])
    // What the service claims to do is in the trace: check-in messages on the main port,
    // jobs through the workers' command sources and ports, the nested critical run.
    let callouts = Set(log.records.compactMap(\.calloutName))
    for name in ["main.port", "worker-1.commands", "worker-2.port", "heartbeat", "signals"]
    where name != "signals" {
      #expect(callouts.contains(name), "no call-out '\(name)' in \(callouts.sorted())")
    }
    #expect(
      log.records.contains { $0.mode == "critical" && $0.depth == 2 && $0.activity == "entry" })
  }

  // SIGHUP reopens the log instead (LogRotationTests).
  @Test(arguments: [SIGTERM, SIGINT])
  func aSignalMidRunShutsDownGracefullyWithCompleteLogs(signal: Int32) throws {
    let directory = try scratchDirectory("signal\(signal)")
    let demo = try DemoProcess(
      ["run", "--workers", "3", "--no-journal", "--json-log", "trace.jsonl"], directory: directory)
    #expect(demo.waitForOutput("heartbeat 2"))
    demo.send(signal)
    let result = demo.wait()
    #expect(result.exitedNormally && result.status == 0, "stderr: \(result.stderr)")
    let name = [SIGTERM: "SIGTERM", SIGINT: "SIGINT"][signal] ?? "?"
    #expect(result.stdout.contains("shutting down: \(name) from pid \(getpid())"))
    #expect(result.stdout.contains("JSON log written: trace.jsonl"))
    let log = try LogCheck(path: directory + "/trace.jsonl")
    #expect(log.loops.count == 4)
    #expect(log.problems() == [])
    // The signal arrived as a call-out of the signal source on the main loop.
    #expect(log.records.contains { $0.calloutName == "signals" && $0.loop == 1 })
  }

  /// The watchdog is fed only while no loop is stalled: a worker's loop blocked past the
  /// stall threshold withholds the pings (said with a STATUS line), and they resume once it
  /// recovers. Read from a real datagram socket while the demo runs (the kernel queues only
  /// a few datagrams).
  @Test func theSystemdWatchdogIsNotFedWhileAWorkerLoopIsStalled() throws {
    let directory = try scratchDirectory("notify-stall")
    let socketPath = directory + "/notify.sock"
    let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    #expect(receiver >= 0)
    defer { close(receiver) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socketPath.utf8)) }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(receiver, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    #expect(bound == 0)
    let messages = GuardedState<[String]>([])
    let reader = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      var buffer = [UInt8](repeating: 0, count: 4096)
      let deadline = ContinuousClock.now + .seconds(60)
      while ContinuousClock.now < deadline {
        var entry = pollfd(fd: receiver, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 100) > 0 else { continue }
        let count = recv(receiver, &buffer, buffer.count, 0)
        guard count > 0 else { continue }
        let message = String(decoding: buffer[0..<count], as: UTF8.self)
        messages.withLock { $0.append(message) }
        if message.hasPrefix("STOPPING=1") { break }
      }
      reader.signal()
    }
    let result = try runDemo(
      [
        "run", "--duration", "3", "--no-journal", "--stall-threshold", "100ms",
        "--inject-worker-stall", "1s",
      ], directory: directory,
      environment: ["NOTIFY_SOCKET": socketPath, "WATCHDOG_USEC": "200000"])
    #expect(result.status == 0, "stderr: \(result.stderr)")
    #expect(reader.wait(timeout: .now() + 60) == .success)
    let seen = messages.withLock { $0 }
    let withheld = try #require(seen.firstIndex { $0.hasPrefix("STATUS=watchdog withheld") })
    let resumed = try #require(seen.firstIndex { $0 == "STATUS=running" })
    #expect(withheld < resumed, "\(seen)")
    // Pings before the stall was seen and after the recovery, none in between.
    #expect(seen[..<withheld].contains("WATCHDOG=1"), "\(seen)")
    #expect(!seen[withheld..<resumed].contains("WATCHDOG=1"), "\(seen)")
    #expect(seen[resumed...].contains("WATCHDOG=1"), "\(seen)")
    #expect(seen.last?.hasPrefix("STOPPING=1") == true, "\(seen)")
  }

  @Test func underSystemdItSaysReadyPingsTheWatchdogAndSaysStopping() throws {
    let directory = try scratchDirectory("notify")
    let socketPath = directory + "/notify.sock"
    let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    #expect(receiver >= 0)
    defer { close(receiver) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socketPath.utf8)) }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(receiver, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    #expect(bound == 0)
    let result = try runDemo(
      ["run", "--duration", "1.2", "--no-journal"], directory: directory,
      environment: ["NOTIFY_SOCKET": socketPath, "WATCHDOG_USEC": "400000"])
    #expect(result.status == 0, "stderr: \(result.stderr)")
    var messages: [String] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = recv(receiver, &buffer, buffer.count, 0)
      if count <= 0 { break }
      messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
    }
    let ready = messages.firstIndex { $0.hasPrefix("READY=1") }
    let stopping = messages.firstIndex { $0.hasPrefix("STOPPING=1") }
    let pings = messages.filter { $0 == "WATCHDOG=1" }.count
    #expect(ready != nil && stopping != nil, "\(messages)")
    #expect((ready ?? 1) < (stopping ?? 0), "READY before STOPPING: \(messages)")
    // A ping every 200 ms (half of WATCHDOG_USEC) for 1.2 s: a few, loosely.
    #expect(pings >= 3, "\(pings) watchdog pings: \(messages)")
    #expect(result.stdout.contains("told systemd READY=1"))
  }

  @Test func withoutJournaldItSaysSoOnceAndStillWritesTheJSONLog() throws {
    let directory = try scratchDirectory("nojournal")
    let result = try runDemo(
      ["run", "--duration", "1", "--journal-socket", directory + "/no-journal-here.sock"],
      directory: directory)
    #expect(result.status == 0, "stderr: \(result.stderr)")
    let notes = result.stderr.components(separatedBy: "journald is not available").count - 1
    #expect(notes == 1, "stderr: \(result.stderr)")
    let log = try LogCheck(path: directory + "/runloop-trace.jsonl")
    #expect(log.loops.count == 3)
    #expect(log.problems() == [])
    #expect(result.stdout.contains("journald drops"))
  }

  @Test(
    .enabled(if: journaldAvailable, "no journald could be started (scripts/ensure-journald.sh)"))
  func journalctlFindsTheSameBeforeWaitingRecordsAsTheJSONLog() throws {
    let directory = try scratchDirectory("journal")
    let result = try runDemo(["run", "--duration", "1.5"], directory: directory)
    #expect(result.status == 0, "stderr: \(result.stderr)")
    let log = try LogCheck(path: directory + "/runloop-trace.jsonl")
    let runID = try #require(log.records.first?.run)
    let fromLog = log.records.filter { $0.activity == "beforeWaiting" }
      .map { "\($0.loop)/\($0.iteration)/\($0.seq)" }
    _ = try runProgram("/usr/bin/journalctl", ["--sync"])
    let journal = try runProgram(
      "/usr/bin/journalctl",
      [
        "-t", "runloop-demo", "RUNLOOP_ACTIVITY=beforeWaiting", "RUNLOOP_RUN=\(runID)", "-o",
        "json", "--no-pager",
      ])
    let fromJournal = try journal.output.split(separator: "\n").map { line -> String in
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
      let field = { (name: String) in object[name] as? String ?? "?" }
      return "\(field("RUNLOOP_LOOP"))/\(field("RUNLOOP_ITERATION"))/\(field("RUNLOOP_SEQ"))"
    }
    #expect(!fromLog.isEmpty)
    #expect(fromJournal.sorted() == fromLog.sorted())
    // The summary reported no journald drops for any loop.
    let rows = result.stdout.split(separator: "\n").filter {
      $0.hasPrefix("1 ") || $0.hasPrefix("2 ") || $0.hasPrefix("3 ")
    }
    #expect(rows.count == 3 && rows.allSatisfy { $0.hasSuffix(" 0") }, "\(rows)")
  }
}
