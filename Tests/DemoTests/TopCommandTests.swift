import Foundation
import Glibc
import Testing

private let tmux = "/usr/bin/tmux"

/// Runs tmux to its end with every signal unblocked and standard input, output and error on
/// /dev/null (or output into `capture`); returns its exit status. Not through Foundation's
/// `Process`: the server a tmux client starts keeps what the client inherited, and `Process`
/// then never reports the client's end. And the test process blocks signals (the run loops
/// read them through signalfd), which a child would inherit.
private func runTmux(_ arguments: [String], capture: UnsafeMutablePointer<String>? = nil) -> Int32 {
  var pipe: [Int32] = [-1, -1]
  if capture != nil {
    guard Glibc.pipe(&pipe) == 0 else { return -1 }
    for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
  }
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  if capture != nil {
    posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
  } else {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
  }
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
  var attributes = posix_spawnattr_t()
  posix_spawnattr_init(&attributes)
  defer { posix_spawnattr_destroy(&attributes) }
  var none = sigset_t()
  sigemptyset(&none)
  posix_spawnattr_setsigmask(&attributes, &none)
  posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
  let argv = ([tmux] + arguments).map { strdup($0) } + [nil]
  defer { for pointer in argv { free(pointer) } }
  var pid: pid_t = 0
  let spawned = posix_spawn(&pid, tmux, &actions, &attributes, argv, environ)
  if capture != nil { close(pipe[1]) }
  guard spawned == 0 else {
    if capture != nil { close(pipe[0]) }
    return -1
  }
  if let capture {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = read(pipe[0], &buffer, buffer.count)
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { break }
      bytes += buffer[0..<count]
    }
    close(pipe[0])
    capture.pointee = String(decoding: bytes, as: UTF8.self)
  }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
  return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
}

/// A tmux server of the test's own (its own socket), with one session running `command` in a
/// window of `columns` × `rows`.
private final class TmuxSession {
  let socket = "runloop-top-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
  let name = "top"

  init(_ command: String, columns: Int = 160, rows: Int = 20) throws {
    let status = runTmux([
      "-L", socket, "new-session", "-d", "-s", name, "-x", String(columns), "-y", String(rows),
      command,
    ])
    guard status == 0 else { throw POSIXError(.ECHILD) }
  }

  /// The visible text of the pane.
  func screen() -> String {
    var text = ""
    _ = runTmux(["-L", socket, "capture-pane", "-p", "-t", name], capture: &text)
    return text
  }

  func sendKeys(_ keys: String) {
    _ = runTmux(["-L", socket, "send-keys", "-t", name, keys])
  }

  /// Whether the session (its command) is still there.
  var isAlive: Bool {
    runTmux(["-L", socket, "has-session", "-t", name]) == 0
  }

  func end() {
    _ = runTmux(["-L", socket, "kill-server"])
  }
}

/// The frame number in the pane's title line, or nil.
private func frame(_ screen: String) -> Int? {
  guard let line = screen.split(separator: "\n").first(where: { $0.hasPrefix("runloop-demo top") }),
    let range = line.range(of: "frame ")
  else { return nil }
  return Int(line[range.upperBound...].prefix { $0.isNumber })
}

/// The row of loop `id` in the pane, split into cells by runs of two spaces.
private func row(_ screen: String, loop id: Int) -> [String]? {
  screen.split(separator: "\n").first { $0.hasPrefix("\(id) ") }.map { line in
    line.components(separatedBy: "  ").map { $0.trimmingCharacters(in: .whitespaces) }
      .filter { !$0.isEmpty }
  }
}

@Suite("runloop-demo top in a real terminal")
struct TopCommandTests {
  @Test(.enabled(if: access(tmux, X_OK) == 0, "tmux is not installed (scripts/ensure-deps.sh)"))
  func topShowsTheLoopsOfARunningServiceAndRedrawsInPlace() throws {
    let directory = try scratchDirectory("top")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = directory + "/service.jsonl"
    let service = try DemoProcess(
      ["run", "--workers", "2", "--duration", "3", "--no-journal", "--json-log", log])
    let session = try TmuxSession("\(demoBinary) top \(log) --interval 0.25")
    defer { session.end() }

    // All three loops appear, asleep between heartbeats, with the service's thread names.
    var screen = ""
    #expect(
      eventually(10) {
        screen = session.screen()
        return ["runloop-demo", "worker-1", "worker-2"].allSatisfy { screen.contains($0) }
          && screen.contains("asleep")
      }, "\(screen)")
    #expect(row(screen, loop: 1)?[1] == "runloop-demo")
    #expect(row(screen, loop: 2)?[1] == "worker-1")
    #expect(row(screen, loop: 3)?[1] == "worker-2")
    #expect(row(screen, loop: 2)?[3] == "default")

    // It redraws in place: the frame number grows while the pane holds one title and one
    // header.
    let first = try #require(frame(screen))
    #expect(eventually(10) { (frame(session.screen()) ?? 0) >= first + 3 })
    screen = session.screen()
    #expect(screen.components(separatedBy: "runloop-demo top").count == 2, "\(screen)")
    #expect(screen.components(separatedBy: "LOOP  THREAD").count == 2, "\(screen)")

    // When the service has stopped, every loop shows as not running.
    let ended = service.wait(timeout: .seconds(20))
    #expect(ended.status == 0, "\(ended.stderr)")
    #expect(
      eventually(10) {
        screen = session.screen()
        return (1...3).allSatisfy { row(screen, loop: $0)?[2] == "not running" }
      }, "\(screen)")
    // Every utilization shown is a percentage from 0 to 100.
    for id in 1...3 {
      let total = try #require(row(screen, loop: id)?[5])
      let value = try #require(Double(total.dropLast()))
      #expect(total.hasSuffix("%") && value >= 0 && value <= 100)
    }

    // Ctrl-C ends it.
    session.sendKeys("C-c")
    #expect(eventually(10) { !session.isAlive })
  }

  @Test func onceReadsTheLogAndPrintsOneTable() throws {
    let directory = try scratchDirectory("top-once")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = directory + "/t.jsonl"
    let scenario = try runDemo(["scenario", "timers-overrun", "--json-log", log])
    #expect(scenario.status == 0)
    let result = try runDemo(["top", log, "--once", "--stall-threshold", "50ms"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(!result.stdout.contains("\u{1B}["))
    let cells = try #require(row(result.stdout, loop: 1))
    #expect(cells[2] == "not running")
    // The scenario's overrunning timer handler stayed awake past 50 ms once.
    #expect(cells[8] == "1")
    #expect(cells[9].hasPrefix("timer overrun "))
  }
}
