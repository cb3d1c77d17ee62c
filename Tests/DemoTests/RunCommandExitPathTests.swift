import Foundation
import Glibc
import RunLoopTracing
import Testing

/// How `runloop-demo run` ends when its trace cannot be written whole, when its reader goes
/// away, and when journald is stopped: it never reports success for a trace it lost.
@Suite("runloop-demo run: losses and exit paths")
struct RunCommandExitPathTests {
  @Test func aJSONLogOnDevFullExitsNonZeroSayingHowManyRecordsWereLost() throws {
    let result = try runDemo([
      "run", "--duration", "0.7", "--no-journal", "--json-log", "/dev/full",
    ])
    #expect(result.exitedNormally && result.status == 74, "stderr: \(result.stderr)")
    #expect(result.stderr.contains("the JSON log '/dev/full' is incomplete: 0 records written"))
    #expect(result.stderr.contains("No space left on device"))
    #expect(!result.stdout.contains("JSON log written"))
    #expect(result.stdout.contains("JSON log INCOMPLETE"))
  }

  // A real full disk: an 8 KiB tmpfs. The log keeps only whole records, exactly as many as
  // the message says were written.
  @Test(.enabled(if: SmallTmpfs.canMount, "needs root to mount a tmpfs"))
  func aFullDiskExitsNonZeroAndLeavesAValidLogOfTheRecordsItCounts() throws {
    let disk = try SmallTmpfs(kilobytes: 8)
    defer { disk.unmount() }
    let path = disk.path + "/trace.jsonl"
    let result = try runDemo(["run", "--duration", "1", "--no-journal", "--json-log", path])
    #expect(result.exitedNormally && result.status == 74, "stderr: \(result.stderr)")
    #expect(result.stderr.contains("No space left on device"))
    // A loss record may fit where a taken-back record was: the sink's line, not a record.
    let records = try TraceLog.read(contentsOf: path).filter { $0.record != .loss }
    #expect(!records.isEmpty)
    #expect(
      result.stderr.contains("is incomplete: \(records.count) records written"),
      "\(records.count) records in the file; stderr: \(result.stderr)")
    // Each record once (the sink's own test checks the exact prefix; here several loops
    // interleave in the queue).
    #expect(Set(records.map(\.seq)).count == records.count)
  }

  @Test func aLogDeletedDuringTheRunExitsNonZeroSayingSo() throws {
    let directory = try scratchDirectory("deleted")
    let demo = try DemoProcess(
      ["run", "--no-journal", "--json-log", "trace.jsonl"], directory: directory)
    #expect(demo.waitForOutput("heartbeat 1"))
    #expect(unlink(directory + "/trace.jsonl") == 0)
    demo.send(SIGTERM)
    let result = demo.wait()
    #expect(result.exitedNormally && result.status == 74, "stderr: \(result.stderr)")
    #expect(result.stderr.contains("the file was deleted during the run"))
  }

  // A reader that opened the FIFO and reads nothing: the pipe fills, the writer blocks,
  // and shutdown gives up at its bound, counting what it could not write.
  @Test func aStalledFIFOReaderEndsTheRunAtTheShutdownBoundWithTheLossReported() throws {
    let directory = try scratchDirectory("stalledfifo")
    let path = directory + "/trace.fifo"
    #expect(mkfifo(path, 0o600) == 0)
    let reader = open(path, O_RDONLY | O_NONBLOCK)
    #expect(reader >= 0)
    defer { close(reader) }
    // The smallest pipe the kernel allows: a second's trace overflows it.
    let setPipeSize: Int32 = 1031  // F_SETPIPE_SZ
    _ = fcntl(reader, setPipeSize, 4096)
    let start = ContinuousClock.now
    let result = try runDemo(
      ["run", "--duration", "1", "--no-journal", "--json-log", path, "--shutdown-timeout", "1"])
    let elapsed = ContinuousClock.now - start
    #expect(result.exitedNormally && result.status == 74, "stderr: \(result.stderr)")
    #expect(result.stderr.contains("still waiting to be written when the 1.0 s shutdown bound"))
    // Loosely: a 1 s run and a 1 s bound, never the writer's wait for ever.
    #expect(elapsed < .seconds(15))
  }

  // A second SIGTERM or SIGINT while the shutdown waits for a stalled FIFO reader (a 60 s
  // bound): the run ends at once with 128 + the signal, saying what it abandoned.
  @Test(arguments: [SIGTERM, SIGINT])
  func aSecondSignalDuringTheShutdownExitsAtOnceSayingWhatItAbandoned(signal: Int32) throws {
    let directory = try scratchDirectory("secondsignal\(signal)")
    let path = directory + "/trace.fifo"
    #expect(mkfifo(path, 0o600) == 0)
    let reader = open(path, O_RDONLY | O_NONBLOCK)
    #expect(reader >= 0)
    defer { close(reader) }
    let setPipeSize: Int32 = 1031  // F_SETPIPE_SZ
    _ = fcntl(reader, setPipeSize, 4096)
    let demo = try DemoProcess(
      ["run", "--no-journal", "--json-log", path, "--shutdown-timeout", "60"])
    #expect(demo.waitForOutput("heartbeat 1"))
    demo.send(signal)
    #expect(demo.waitForOutput("writing out the logs"))
    demo.send(signal)
    let result = demo.wait(timeout: .seconds(30))
    let name = signal == SIGTERM ? "SIGTERM" : "SIGINT"
    #expect(result.exitedNormally && result.status == 128 + signal, "stderr: \(result.stderr)")
    #expect(
      result.stderr.contains(
        "\(name) from pid \(getpid()) during the shutdown (writing out the logs, within the "
          + "60.0 s shutdown bound): exiting now with status \(128 + signal); abandoned: "),
      "stderr: \(result.stderr)")
    #expect(result.stderr.contains("JSON log records not yet written (the log is incomplete)"))
    #expect(!result.stdout.contains("shutdown complete"))
  }

  @Test func aFIFOWithNoReaderIsAClearErrorNotAnEndlessOpen() throws {
    let directory = try scratchDirectory("noreader")
    let path = directory + "/trace.fifo"
    #expect(mkfifo(path, 0o600) == 0)
    let result = try runDemo(
      ["run", "--duration", "1", "--no-journal", "--json-log", path, "--fifo-wait", "0.3"],
      timeout: .seconds(10))
    #expect(result.exitedNormally && result.status == 1, "stderr: \(result.stderr)")
    #expect(
      result.stderr.contains("it is a FIFO and no process opened it for reading within 0.3 s"))
  }

  @Test func sigtermEndsTheWaitForAFIFOReader() throws {
    let directory = try scratchDirectory("fifosignal")
    let path = directory + "/trace.fifo"
    #expect(mkfifo(path, 0o600) == 0)
    let demo = try DemoProcess(
      ["run", "--no-journal", "--json-log", path, "--fifo-wait", "60"], directory: directory)
    usleep(300_000)
    demo.send(SIGTERM)
    let result = demo.wait(timeout: .seconds(10))
    #expect(result.exitedNormally && result.status == 1, "stderr: \(result.stderr)")
    #expect(result.stderr.contains("interrupted by SIGTERM while waiting for a reader"))
  }

  // `runloop-demo run | head -1`: a real pipeline. head exits after one line; the demo's
  // next write fails with EPIPE and ends the run as SIGTERM does, trace complete.
  @Test func aClosedStandardOutputEndsTheRunGracefullyWithACompleteLog() throws {
    let directory = try scratchDirectory("head")
    let script =
      "{ \"$0\" run --no-journal --json-log trace.jsonl 2>stderr.txt; echo $? >status.txt; }"
      + " | head -1"
    let result = try DemoProcess(
      ["-c", script, demoBinary], executable: "/bin/sh", directory: directory
    ).wait()
    #expect(result.status == 0)
    #expect(result.stdout.hasPrefix("runloop-demo: run id"))
    #expect(result.stdout.split(separator: "\n").count == 1)
    let status = try String(contentsOfFile: directory + "/status.txt", encoding: .utf8)
    let stderr = try String(contentsOfFile: directory + "/stderr.txt", encoding: .utf8)
    #expect(status == "0\n", "stderr: \(stderr)")
    #expect(stderr.isEmpty, "stderr: \(stderr)")
    // head may be gone before the service has started: the main loop still runs once, and
    // every loop that ran is in the log, each run with its exit.
    let log = try LogCheck(path: directory + "/trace.jsonl")
    #expect(log.loops.contains(1))
    #expect(log.problems() == [])
  }

  // journald stopped (a journald of the test's own): shutdown takes one bound for all the
  // loops' sinks, not 5 s per loop, and the entries left behind are counted and reported.
  @Test(.enabled(if: PrivateJournald.canStart, "needs root and systemd-journald"))
  func aStoppedJournaldCostsOneShutdownBoundAndItsLossIsReported() throws {
    let journald = try PrivateJournald()
    defer { journald.terminate() }
    try #require(journald.stop(), "the private journald did not stop")
    defer { journald.resume() }
    let start = ContinuousClock.now
    let result = try runDemo(
      [
        "run", "--duration", "1", "--workers", "4", "--journal-socket", journald.socketPath,
        "--shutdown-timeout", "1",
      ], directory: try scratchDirectory("stoppedjournald"), timeout: .seconds(40))
    let elapsed = ContinuousClock.now - start
    #expect(result.exitedNormally && result.status == 0, "stderr: \(result.stderr)")
    // Five sinks waiting 5 s each in turn took 25 s; one 1 s bound takes a few.
    #expect(elapsed < .seconds(10), "the run took \(elapsed)")
    let line = result.stderr.split(separator: "\n").first { $0.contains("journald did not take") }
    let words = line?.split(separator: " ") ?? []
    let count = words.firstIndex(of: "take").flatMap { Int(words[$0 + 1]) } ?? 0
    #expect(count > 0, "stderr: \(result.stderr)")
    // The summary's journald drops column adds up to at least what was left behind.
    let drops = result.stdout.split(separator: "\n").filter {
      $0.first?.isNumber == true && $0.split(separator: " ").count > 3
    }.compactMap { Int($0.split(separator: " ").last ?? "") }
    #expect(drops.count == 5, "\(result.stdout)")
    #expect(drops.reduce(0, +) >= count)
  }

  // journald vanishing mid-run: each loop's sink finds no journal; the line says so once.
  @Test func noJournalAnswersIsPrintedOnceNotOncePerLoop() throws {
    let directory = try scratchDirectory("journalgone")
    let socketPath = directory + "/journal.sock"
    let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    #expect(receiver >= 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socketPath.utf8)) }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(receiver, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    #expect(bound == 0)
    let demo = try DemoProcess(
      ["run", "--workers", "4", "--journal-socket", socketPath], directory: directory)
    #expect(demo.waitForOutput("heartbeat 1"))
    // The socket file stays, nobody is bound to it: sends fail with ECONNREFUSED.
    close(receiver)
    #expect(demo.waitForOutput("heartbeat 3"))
    demo.send(SIGTERM)
    let result = demo.wait()
    #expect(result.exitedNormally && result.status == 0, "stderr: \(result.stderr)")
    let notes = result.stderr.components(separatedBy: "no journal answers").count - 1
    #expect(notes == 1, "stderr: \(result.stderr)")
  }
}
