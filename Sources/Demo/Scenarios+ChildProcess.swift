import Foundation

extension Scenarios {
  /// A process, not started, that runs this program again as `scenario name` with
  /// `environment` added to this process's environment: how a scenario shows in a child
  /// what would end or wedge its own process, and how the child knows its part.
  static func childProcess(scenario name: String, environment: [String: String]) -> Process {
    let child = Process()
    child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
    child.arguments = ["scenario", name]
    child.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    return child
  }
}
