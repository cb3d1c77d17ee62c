import RunLoopCore

package func modesHeldExample() throws {
  // snippet: modes-held
  let loop = EventRunLoop.current
  let importing: LoopMode = "import"

  let progress = CustomInputSource(name: "progress") { print("progress update") }
  try loop.add(progress, mode: importing)
  let other = CustomInputSource(name: "other") { print("default-mode work") }
  try loop.add(other, mode: .default)

  progress.signal()
  // The default mode does not watch `progress`: its signal waits, and nothing is lost.
  try loop.run(mode: .default, timeout: .zero)
  assert(progress.isSignalled)
  // A run in the import mode performs it.
  try loop.run(mode: importing, timeout: .zero)
  assert(!progress.isSignalled)
  // end snippet
}

package func modesCommonExample() throws {
  // snippet: modes-common
  let loop = EventRunLoop.current
  assert(loop.isCommonMode(.default))  // a common mode from the start

  let status = CustomInputSource(name: "status") { print("status changed") }
  try loop.add(status, mode: .common)  // in every common mode, now and later
  assert(loop.contains(status, mode: .default))

  let tracking: LoopMode = "tracking"
  loop.addCommonMode(tracking)  // `status` joins "tracking" here
  assert(loop.contains(status, mode: tracking))
  // end snippet
}

package func modesNestedExample() throws {
  // snippet: modes-nested
  let loop = EventRunLoop.current
  let modal: LoopMode = "modal"

  let answer = CustomInputSource(name: "answer") { print("the user answered") }
  try loop.add(answer, mode: modal)

  let openDialog = CustomInputSource(name: "open-dialog") {
    // A nested run from inside a call-out. Only the modal mode's items take part until
    // it returns; sources of the outer mode keep their signals for later.
    let inner = EventRunLoop.current
    let result = try? inner.run(mode: modal, timeout: .seconds(30), returnAfterSourceHandled: true)
    print("dialog closed:", result.map(\.description) ?? "error")
  }
  try loop.add(openDialog, mode: .default)
  // end snippet
}
