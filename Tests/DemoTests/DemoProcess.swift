import Foundation
import Glibc
import RunLoopCore
@_exported import RunLoopTestSupport
import RunLoopTracing

/// The built `runloop-demo`, found next to the test bundle: SwiftPM puts executables and the
/// test binary in the same build directory, and the test target depends on the demo so it
/// is built first.
let demoBinary: String = {
  let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
  return exe.deletingLastPathComponent().appendingPathComponent("runloop-demo").path
}()

/// A fresh scratch directory for one test.
func scratchDirectory(_ name: String) throws -> String {
  let path =
    NSTemporaryDirectory() + "demo-tests-\(getpid())-\(name)-\(UInt32.random(in: 0...UInt32.max))"
  try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  return path
}

/// How a demo process ended.
struct DemoResult {
  let status: Int32
  let exitedNormally: Bool
  let stdout: String
  let stderr: String
}

/// A running `runloop-demo` (or other program) whose output is collected as it comes, so a
/// test can wait for a line, send a signal or keys, and then wait for the exit.
final class DemoProcess: @unchecked Sendable {
  let process = Process()
  private let endSignal: ProcessExitSignal
  private let output = GuardedState<(stdout: [UInt8], stderr: [UInt8])>(([], []))
  private let readersDone = DispatchGroup()

  /// Starts `arguments` on the demo binary (or `executable`), in `directory`, with the
  /// extra `environment`. With `terminal`, standard input, output and error are that file
  /// descriptor (a pseudo-terminal's secondary side) and nothing is collected here.
  init(
    _ arguments: [String], executable: String = demoBinary, directory: String? = nil,
    environment: [String: String] = [:], terminal: Int32? = nil, input: String? = nil
  ) throws {
    endSignal = ProcessExitSignal(process)
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    if let terminal {
      let handle = FileHandle(fileDescriptor: terminal, closeOnDealloc: false)
      process.standardInput = handle
      process.standardOutput = handle
      process.standardError = handle
      try process.run()
      return
    }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let inputPipe = input.map { _ in Pipe() }
    process.standardInput = inputPipe ?? FileHandle.nullDevice
    try process.run()
    if let inputPipe, let input {
      // Everything at once, then end of file: what `echo ANSWER | runloop-demo ...` gives.
      inputPipe.fileHandleForWriting.write(Data(input.utf8))
      try inputPipe.fileHandleForWriting.close()
    }
    collect(out.fileHandleForReading.fileDescriptor, stderr: false)
    collect(err.fileHandleForReading.fileDescriptor, stderr: true)
  }

  private func collect(_ descriptor: Int32, stderr: Bool) {
    readersDone.enter()
    let thread = Thread { [self] in
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let count = read(descriptor, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        output.withLock { state in
          if stderr {
            state.stderr += buffer[0..<count]
          } else {
            state.stdout += buffer[0..<count]
          }
        }
      }
      readersDone.leave()
    }
    thread.start()
  }

  /// Standard output so far.
  var stdout: String { String(decoding: output.withLock { $0.stdout }, as: UTF8.self) }

  /// Waits until standard output contains `text`; returns whether it did before `timeout`.
  func waitForOutput(_ text: String, timeout: Duration = .seconds(10)) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      if stdout.contains(text) { return true }
      if !process.isRunning && stdout.contains(text) == false { return false }
      usleep(20_000)
    }
    return false
  }

  /// Sends `signal` to the process.
  func send(_ signal: Int32) {
    kill(process.processIdentifier, signal)
  }

  /// Waits for the exit (killing the process after `timeout`) and returns how it ended.
  func wait(timeout: Duration = .seconds(20)) -> DemoResult {
    let ended = endSignal.waitOrKill(process, timeout: timeout)
    _ = readersDone.wait(timeout: .now() + 5)
    let collected = output.withLock { $0 }
    guard ended else {
      // Reading the status of a process Foundation still counts as running would trap.
      return DemoResult(
        status: -1, exitedNormally: false,
        stdout: String(decoding: collected.stdout, as: UTF8.self),
        stderr: String(decoding: collected.stderr, as: UTF8.self)
          + "\n[test] the process was not seen to end, even after SIGKILL")
    }
    return DemoResult(
      status: process.terminationStatus,
      exitedNormally: process.terminationReason == .exit,
      stdout: String(decoding: collected.stdout, as: UTF8.self),
      stderr: String(decoding: collected.stderr, as: UTF8.self))
  }
}

/// Runs the demo to its end.
func runDemo(
  _ arguments: [String], directory: String? = nil, environment: [String: String] = [:],
  input: String? = nil, timeout: Duration = .seconds(20)
) throws -> DemoResult {
  try DemoProcess(arguments, directory: directory, environment: environment, input: input)
    .wait(timeout: timeout)
}

/// What a complete JSON log looks like, per loop: entries and exits balance (every run that
/// began ended), runs nest properly, the iteration numbers have no gaps, and the record
/// numbers (`seq`) of the whole log run from 1 without a hole.
struct LogCheck {
  let records: [TraceRecord]
  var loops: Set<UInt64> { Set(records.map(\.loop)) }

  init(path: String) throws {
    records = try TraceLog.read(contentsOf: path)
  }

  init(records: [TraceRecord]) {
    self.records = records
  }

  /// Problems found; empty when the log is complete.
  func problems() -> [String] {
    var problems: [String] = []
    let seqs = records.map(\.seq).sorted()
    if seqs.isEmpty || seqs != Array(1...UInt64(seqs.count)) {
      problems.append("record numbers are not 1...\(seqs.count)")
    }
    for (loop, list) in Dictionary(grouping: records, by: \.loop) {
      let ordered = list.sorted { $0.seq < $1.seq }
      var depth = 0
      var entries = 0
      for record in ordered where record.record == .activity {
        if record.activity == "entry" {
          depth += 1
          entries += 1
          if record.depth != depth {
            problems.append("loop \(loop): entry at depth \(record.depth), expected \(depth)")
          }
        } else if record.activity == "exit" {
          if record.depth != depth {
            problems.append("loop \(loop): exit at depth \(record.depth), expected \(depth)")
          }
          depth -= 1
          if depth < 0 { problems.append("loop \(loop): exit without entry (seq \(record.seq))") }
        }
      }
      if entries == 0 { problems.append("loop \(loop): no run") }
      if depth != 0 { problems.append("loop \(loop): \(depth) runs never exited") }
      let iterations = Set(ordered.map(\.iteration)).sorted()
      if let first = iterations.first, let last = iterations.last,
        last - first + 1 != UInt64(iterations.count)
      {
        problems.append(
          "loop \(loop): iteration numbers have gaps (\(iterations.count) of \(first)...\(last))")
      }
    }
    return problems
  }
}
