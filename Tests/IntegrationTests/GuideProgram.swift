import Foundation
import RunLoopTestSupport
import Testing

/// One of the guide's programs (the first run loop, a tutorial step, an article's snippet),
/// built next to the test bundle because this target depends on it, run as the reader would.
struct GuideProgram {
  /// The program's path: `name` beside the test bundle.
  let path: String

  init(_ name: String) {
    path =
      URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
      .deletingLastPathComponent().appendingPathComponent(name).path
  }

  /// Runs the program with `arguments` in `directory` (a fresh one when nil); returns its exit
  /// status and its standard output. A run that does not end within `timeout` is killed and
  /// recorded as a failed expectation.
  func run(
    _ arguments: [String] = [], in directory: String? = nil, timeout: Duration = .seconds(30)
  ) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let pipe = Pipe()
    process.standardOutput = pipe
    let ended = ProcessExitSignal(process)
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    let name = ([path] + arguments).joined(separator: " ")
    #expect(ended.waitOrKill(process, timeout: timeout), "\(name) did not end")
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
  }
}
