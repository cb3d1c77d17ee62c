import ArgumentParser
import Foundation
import Glibc
import RunLoopCore

/// `runloop-bench`: our run loop side by side with CFRunLoop and the bare Linux calls.
struct RunLoopBenchCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "runloop-bench",
    abstract: "Measures the run-loop framework against CFRunLoop and the Linux floor.")

  @Option(name: .customLong("suite"), help: "Run only these suites (repeatable).")
  var suites: [String] = []

  @Flag(help: "Shorter runs, fewer rounds: a smoke run, not figures to quote.")
  var quick = false

  @Option(help: "Also write the results as JSON to this path.")
  var json: String?

  @Flag(help: "List the suites and exit.")
  var list = false

  @Option(
    name: .customLong("spin-limit-us"),
    help: "Our loops' limit of polling before sleep, in microseconds (default: the loops' own).")
  var spinLimitMicroseconds: Int?

  func run() throws {
    if list {
      for suite in allSuites { print(suite.name) }
      return
    }
    let unknown = suites.filter { name in !allSuites.contains { $0.name == name } }
    guard unknown.isEmpty else {
      throw ValidationError(
        "unknown suite(s) \(unknown); known: \(allSuites.map(\.name).joined(separator: ", "))")
    }
    if let spinLimitMicroseconds {
      EventRunLoop.defaultSpinLimit = .microseconds(spinLimitMicroseconds)
    }
    let options = BenchOptions(quick: quick)
    let report = Report()
    report.machine = machineDescription()
    report.machine["mode"] = quick ? "quick" : "full"
    print(
      "runloop-bench on \(report.machine["cpu"] ?? "?"), \(report.machine["cores"] ?? "?") cores")
    let start = nanosNow()
    for suite in allSuites where suites.isEmpty || suites.contains(suite.name) {
      let suiteStart = nanosNow()
      print("[\(suite.name)]")
      try suite.run(options, report)
      print(String(format: "  (%.1f s)", seconds(since: suiteStart)))
    }
    report.printTable()
    print(String(format: "\nTotal: %.1f s", seconds(since: start)))
    if let json {
      try report.writeJSON(to: json)
      print("JSON written to \(json)")
    }
  }
}

func machineDescription() -> [String: String] {
  var result: [String: String] = [:]
  result["cores"] = "\(sysconf(Int32(_SC_NPROCESSORS_ONLN)))"
  if let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
    let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") })
  {
    result["cpu"] = line.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces)
  }
  var name = utsname()
  uname(&name)
  // `release` is a C char array, a tuple in Swift: read as bytes up to its NUL.
  result["kernel"] = withUnsafeBytes(of: &name.release) {
    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
  }
  return result
}

// Hidden subcommands: the bench re-invokes itself as the server of the cross-process suite.
let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "serve-named" {
  try serveNamed(directory: arguments[2], name: arguments[3])
} else if arguments.count == 4, arguments[1] == "socketport" {
  // Foundation's SocketPort runs in a child: on Linux it can bring the process down.
  // `runloop-bench socketport burst 2` and `... no-components 1` reproduce its two defects.
  print(socketPortChild(mode: arguments[2], count: Int(arguments[3]) ?? 1000))
} else if arguments.count == 4, arguments[1] == "thread-memory" {
  // Each side in a fresh process: the first threads of a process also pay for malloc arenas.
  let count = Int(arguments[3]) ?? 10
  let memory = arguments[2] == "cf" ? cfThreadMemory(count) : try ourThreadMemory(count)
  print(memory.virtualKB, memory.residentKB, memory.heapBytes, memory.descriptors)
} else if arguments.count == 3, arguments[1] == "serve-raw" {
  try serveRaw(path: arguments[2])
} else {
  RunLoopBenchCommand.main()
}
