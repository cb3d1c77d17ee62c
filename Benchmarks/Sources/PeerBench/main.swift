import ArgumentParser
import CPeers
import Foundation
import Glibc

/// `runloop-peers`: our run loop beside libuv, sd-event, GLib and SwiftNIO, and the floor of
/// bare Linux calls, on the same work in one process (Docs/Performance.md, "Against the peers").
struct RunLoopPeersCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "runloop-peers",
    abstract: "Measures the run loop against libuv, sd-event, GLib, SwiftNIO and the floor.")

  @Option(
    name: .customLong("suite"), help: "Run only these suites (repeatable; --list names them).")
  var suites: [String] = []

  @Flag(help: "One short round of each suite: a smoke run for CI, not figures to quote.")
  var quick = false

  @Option(help: "Also write the rows as JSON to this path.")
  var json: String?

  @Flag(help: "List the suites and exit.")
  var list = false

  @Flag(
    name: .customLong("c-peers-in-child"),
    help: "Run each measurement of libuv, sd-event, GLib and the floor in a child process.")
  var cPeersInChild = false

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
    let report = Report()
    report.machine = machineDescription()
    report.machine["mode"] = quick ? "quick" : "full"
    report.machine["load average at start"] = loadAverage()
    print(
      "runloop-peers on \(report.machine["cpu"] ?? "?"), \(report.machine["cores"] ?? "?") cores, "
        + "load average \(report.machine["load average at start"] ?? "?")")
    print(
      [Peer.libuv, .sdEvent, .glib, .floor].map { String(cString: peers_version($0.kind!)) }
        .joined(separator: ", ") + ", " + (report.machine["NIO"] ?? "NIO"))
    CSide.inChild = cPeersInChild
    report.machine["C peers"] = cPeersInChild ? "a child process per measurement" : "this process"
    let options = BenchOptions(quick: quick)
    let start = nanosNow()
    for suite in allSuites where suites.isEmpty || suites.contains(suite.name) {
      let suiteStart = nanosNow()
      print("[\(suite.name)]")
      try suite.run(options, report)
      print(String(format: "  (%.1f s)", Double(nanosNow() - suiteStart) / 1e9))
    }
    report.machine["load average at end"] = loadAverage()
    report.printTables()
    print(
      String(format: "\nTotal: %.1f s; load average at the end: ", Double(nanosNow() - start) / 1e9)
        + (report.machine["load average at end"] ?? "?"))
    if let json {
      try report.writeJSON(to: json)
      print("JSON written to \(json)")
    }
    // What CI's --quick run checks: every side of every row gave a figure.
    if !report.failures.isEmpty {
      print("\nNo figure from: " + report.failures.joined(separator: "; "))
      throw ExitCode.failure
    }
  }
}

/// The 1, 5 and 15 minute load averages, as /proc/loadavg gives them.
func loadAverage() -> String {
  guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
  return text.split(separator: " ").prefix(3).joined(separator: " ")
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
  result["kernel"] = withUnsafeBytes(of: &name.release) {
    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
  }
  for peer in [Peer.libuv, .glib] {
    result[peer.rawValue] = String(cString: peers_version(peer.kind!))
  }
  result["sd-event"] = "libsystemd " + (pkgConfigVersion("libsystemd") ?? "?")
  result["NIO"] = "swift-nio " + (resolvedVersion(of: "swift-nio") ?? "2.101.x")
  return result
}

/// What pkg-config says of a package's version (libsystemd has no version call).
func pkgConfigVersion(_ package: String) -> String? {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
  process.arguments = ["pkg-config", "--modversion", package]
  let pipe = Pipe()
  process.standardOutput = pipe
  process.standardError = FileHandle.nullDevice
  guard (try? process.run()) != nil else { return nil }
  process.waitUntilExit()
  let data = pipe.fileHandleForReading.readDataToEndOfFile()
  return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// A dependency's version from the Package.resolved next to the build folder the executable
/// sits in (`Benchmarks/.build/release/runloop-peers`), if there is one.
func resolvedVersion(of identity: String) -> String? {
  let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
  var directory = executable.deletingLastPathComponent()
  for _ in 0..<4 {
    let candidate = directory.appendingPathComponent("Package.resolved")
    if let data = try? Data(contentsOf: candidate),
      let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
      let pins = object["pins"] as? [[String: Any]],
      let pin = pins.first(where: { ($0["identity"] as? String) == identity }),
      let state = pin["state"] as? [String: Any]
    {
      return state["version"] as? String
    }
    directory = directory.deletingLastPathComponent()
  }
  return nil
}

// The hidden subcommand of --c-peers-in-child: one measurement of a C peer, in this process.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "measure-c" {
  exit(CSide.serveChild(Array(CommandLine.arguments.dropFirst(2))))
}
RunLoopPeersCommand.main()
