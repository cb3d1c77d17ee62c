import ArgumentParser
struct ScenarioCommand: ParsableCommand {
  func run() throws {}
}
