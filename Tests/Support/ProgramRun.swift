import Foundation

/// The package's root directory (this file is Tests/Support/ProgramRun.swift).
///
/// ```swift
/// let script = packageRoot + "/scripts/ensure-journald.sh"
/// ```
public let packageRoot: String = {
  var url = URL(fileURLWithPath: #filePath)
  for _ in 0..<3 { url.deleteLastPathComponent() }
  return url.path
}()

/// Runs a program to its end and returns its standard output and exit status; a program
/// not seen to end within a minute is killed and reported with status -1.
///
/// ```swift
/// let result = try runProgram("/usr/bin/journalctl", ["--sync"])
/// #expect(result.status == 0)
/// ```
public func runProgram(_ path: String, _ arguments: [String]) throws -> (
  output: String, status: Int32
) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: path)
  process.arguments = arguments
  let pipe = Pipe()
  process.standardOutput = pipe
  let ended = ProcessExitSignal(process)
  try process.run()
  let data = pipe.fileHandleForReading.readDataToEndOfFile()
  guard ended.waitOrKill(process, timeout: .seconds(60)) else {
    return ("\(path) was not seen to end, even after SIGKILL", -1)
  }
  return (String(decoding: data, as: UTF8.self), process.terminationStatus)
}

/// Whether a journald answers, starting one with scripts/ensure-journald.sh when none does.
/// Prints why not when it cannot.
///
/// ```swift
/// @Test(.enabled(if: journaldAvailable, "no journald could be started"))
/// func recordsReachTheJournal() throws { ... }
/// ```
public let journaldAvailable: Bool = {
  do {
    let result = try runProgram("/bin/sh", ["\(packageRoot)/scripts/ensure-journald.sh"])
    if result.status != 0 {
      print("journald tests skipped: scripts/ensure-journald.sh exited \(result.status)")
    }
    return result.status == 0
  } catch {
    print("journald tests skipped: cannot run scripts/ensure-journald.sh: \(error)")
    return false
  }
}()
