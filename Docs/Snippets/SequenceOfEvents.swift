import RunLoopCore
import RunLoopObservers

package func sequenceWatchExample() throws {
  // snippet: sequence-watch
  let loop = EventRunLoop.current
  let observer = LoopObserver(activities: .allActivities) { _, activity in
    print("  \(activity)")
  }
  loop.add(observer, mode: .default)
  let source = CustomInputSource(name: "work") { print("  perform work") }
  try loop.add(source, mode: .default)

  source.signal()
  print("a run with a timeout:")
  try loop.run(mode: .default, timeout: .milliseconds(20))
  // entry, beforeTimers, beforeSources, perform work,
  // beforeTimers, beforeSources, beforeWaiting, afterWaiting, exit

  source.signal()
  print("a zero-timeout run:")
  try loop.run(mode: .default, timeout: .zero)
  // entry, beforeTimers, beforeSources, perform work, exit
  // end snippet
}

package func sequenceEmptyExample() throws {
  // snippet: sequence-empty
  let loop = EventRunLoop.current
  let mode: LoopMode = "nothing-here"
  let result = try loop.run(mode: mode, timeout: .seconds(10))
  assert(result == .finished)  // at once, and no observer heard anything
  // end snippet
}

package func sequenceOneSourceExample() throws {
  // snippet: sequence-one-source
  let loop = EventRunLoop.current
  let first = CustomInputSource(name: "first", order: 1) { print("first") }
  let second = CustomInputSource(name: "second", order: 2) { print("second") }
  try loop.add(second, mode: .default)
  try loop.add(first, mode: .default)
  first.signal()
  second.signal()
  loop.perform { print("a block: runs, but is not a handled source") }

  var result = try loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
  // prints the block, then "first"; result == .handledSource; `second` is still signalled
  result = try loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
  // prints "second"; result == .handledSource
  print(result)
  // end snippet
}
