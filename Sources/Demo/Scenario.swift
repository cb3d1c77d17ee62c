/// One narrated scenario: a concept of the guide, shown by a short run.
struct Scenario: Sendable {
  let name: String
  let title: String
  let guide: String
  let body: @Sendable (Narration) throws -> Void

  /// Every scenario, in the order of the guide.
  static let all: [Scenario] = [
    Scenarios.modes, Scenarios.commonModes, Scenarios.customSource, Scenarios.timersGrid,
    Scenarios.timersOverrun, Scenarios.timersTolerance, Scenarios.observers, Scenarios.performs,
    Scenarios.nestedRuns, Scenarios.ports, Scenarios.checkIn, Scenarios.threadsAndExit,
    Scenarios.stall,
  ]

  static func named(_ name: String) -> Scenario? {
    all.first { $0.name == name }
  }
}
