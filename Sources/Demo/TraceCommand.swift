import ArgumentParser
struct TraceCommand: ParsableCommand {
  func run() throws {}
}
