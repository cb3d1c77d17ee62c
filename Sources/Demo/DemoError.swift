/// An error the user can act on: ArgumentParser prints `Error: <message>` and exits 1.
struct DemoError: Error, CustomStringConvertible {
  let message: String

  init(_ message: String) {
    self.message = message
  }

  var description: String { message }
}
