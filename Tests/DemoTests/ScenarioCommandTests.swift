import Testing

@Suite("runloop-demo scenario")
struct ScenarioCommandTests {
  static let names = [
    "modes", "common-modes", "custom-source", "timers-grid", "timers-overrun", "timers-tolerance",
    "observers", "performs", "nested-runs", "ports", "check-in", "threads-exit",
  ]

  @Test func listNamesEveryScenario() throws {
    let result = try runDemo(["scenario", "--list"])
    #expect(result.status == 0)
    let listed = result.stdout.split(separator: "\n").compactMap {
      $0.split(separator: " ").first.map(String.init)
    }
    #expect(listed == Self.names)
  }

  @Test(.serialized, arguments: names)
  func everyScenarioExitsZeroWithAllItsClaimsHolding(name: String) throws {
    let result = try runDemo(["scenario", name])
    #expect(result.exitedNormally && result.status == 0, "\(result.stdout)\n\(result.stderr)")
    #expect(result.stdout.contains("== \(name):"))
    #expect(result.stdout.contains("✓"))
    #expect(!result.stdout.contains("✗"), "\(result.stdout)")
  }

  @Test func allScenariosInOneProcessLeaveNothingBehindForTheNext() throws {
    let result = try runDemo(["scenario", "all"], timeout: .seconds(30))
    #expect(result.exitedNormally && result.status == 0, "\(result.stdout)\n\(result.stderr)")
    #expect(result.stdout.components(separatedBy: "\n== ").count == Self.names.count)
    #expect(!result.stdout.contains("✗"))
  }
}
