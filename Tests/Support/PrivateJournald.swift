import Foundation
import Glibc
import RunLoopCore

/// A systemd-journald of the test's own: a journal namespace (`systemd-journald NAME`,
/// which listens on `/run/systemd/journal.NAME/socket`) started for one test and ended after
/// it. A test that stops journald (SIGSTOP) stops this one, never the machine's journald,
/// which every other test shares; and it is resumed and ended even when the test fails.
/// A namespace reads its configuration only from `journald@NAME.conf` files, so `settings`
/// (lines of the `[Journal]` section, such as `RateLimitBurst=20`) go into a drop-in under
/// /run/systemd that configures this journald and no other.
///
/// ```swift
/// let journald = try PrivateJournald()
/// defer { journald.terminate() }
/// journald.stop()  // SIGSTOP: sends to its socket block once its queue is full
/// ```
public final class PrivateJournald: @unchecked Sendable {
  /// The journal namespace (`journalctl --namespace=NAME` reads it).
  public let namespace: String
  private let process = Process()
  private let ended: ProcessExitSignal
  private let state = GuardedState(false)

  static let program = "/lib/systemd/systemd-journald"

  /// Whether a private journald can be started here (root and systemd-journald present).
  public static let canStart: Bool = {
    getuid() == 0 && FileManager.default.isExecutableFile(atPath: program)
  }()

  /// The native-protocol socket.
  public var socketPath: String { "/run/systemd/journal.\(namespace)/socket" }

  /// The drop-in directory of `settings`, if any.
  private var dropIn: String { "/run/systemd/journald@\(namespace).conf.d" }

  /// Starts the journald with `settings` (lines of its `[Journal]` section) and waits (up to
  /// 10 s) until its socket exists.
  public init(settings: [String] = []) throws {
    namespace = "rltest\(getpid())x\(UInt32.random(in: 0...UInt32.max))"
    process.executableURL = URL(fileURLWithPath: Self.program)
    process.arguments = [namespace]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    process.standardInput = FileHandle.nullDevice
    ended = ProcessExitSignal(process)
    if !settings.isEmpty {
      try FileManager.default.createDirectory(atPath: dropIn, withIntermediateDirectories: true)
      try (["[Journal]"] + settings + [""]).joined(separator: "\n")
        .write(toFile: dropIn + "/test.conf", atomically: true, encoding: .utf8)
    }
    try process.run()
    let deadline = ContinuousClock.now + .seconds(10)
    while access(socketPath, F_OK) != 0 {
      guard ContinuousClock.now < deadline, process.isRunning else {
        terminate()
        throw POSIXError(.ETIMEDOUT)
      }
      usleep(10_000)
    }
  }

  /// The journald's process id.
  public var pid: pid_t { process.processIdentifier }

  /// Stops the journald (SIGSTOP): it reads nothing until ``resume()``. Returns once the
  /// kernel reports the process stopped (state `T` in `/proc/PID/stat`): `true`, or `false`
  /// when it still ran after 10 s (a signal takes effect only when the process next runs,
  /// and a journald not stopped yet still reads what a test sends it "while stopped").
  public func stop() -> Bool {
    kill(pid, SIGSTOP)
    let deadline = ContinuousClock.now + .seconds(10)
    while processState() != "T" {
      guard ContinuousClock.now < deadline else { return false }
      usleep(1000)
    }
    return true
  }

  /// The journald's scheduling state, the third field of `/proc/PID/stat` (`S`, `R`, `T`...).
  private func processState() -> Character? {
    guard let stat = procFileText("/proc/\(pid)/stat"), let end = stat.lastIndex(of: ")")
    else { return nil }
    return stat[stat.index(after: end)...].first { $0 != " " }
  }

  /// Resumes a stopped journald (SIGCONT).
  public func resume() {
    kill(pid, SIGCONT)
  }

  /// The entries of `identifier` in this journal (all of them without one), as field
  /// dictionaries; fields journalctl prints as byte arrays (binary values) are left out.
  public func entries(identifier: String? = nil) throws -> [[String: String]] {
    let result = try runProgram(
      "/usr/bin/journalctl",
      ["--namespace=\(namespace)"] + (identifier.map { ["-t", $0] } ?? [])
        + ["-o", "json", "--no-pager"])
    return try result.output.split(separator: "\n").map { line in
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      return (object ?? [:]).compactMapValues { $0 as? String }
    }
  }

  /// Resumes, ends the journald and removes its sockets and journal files; safe to call
  /// twice.
  public func terminate() {
    let first = state.withLock { done -> Bool in
      defer { done = true }
      return !done
    }
    guard first else { return }
    if process.isRunning {
      kill(pid, SIGCONT)
      kill(pid, SIGTERM)
      _ = ended.waitOrKill(process, timeout: .seconds(10))
    }
    let fileManager = FileManager.default
    try? fileManager.removeItem(atPath: "/run/systemd/journal.\(namespace)")
    try? fileManager.removeItem(atPath: dropIn)
    for directory in ["/var/log/journal", "/run/log/journal"] {
      for name in (try? fileManager.contentsOfDirectory(atPath: directory)) ?? []
      where name.hasSuffix("." + namespace) {
        try? fileManager.removeItem(atPath: directory + "/" + name)
      }
    }
  }

  deinit {
    terminate()
  }
}
