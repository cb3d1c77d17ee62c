import ArgumentParser
struct CountdownCommand: ParsableCommand {
  func run() throws {}
}
