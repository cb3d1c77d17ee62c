// A program with an `async` main (top-level `await`), for the tests of the main loop's
// misuse: each call that cannot work here must throw an error naming the supported pattern,
// never hang. It prints one line per call, then "done".
import RunLoopCore

try await Task.sleep(for: .milliseconds(1))
do {
  try EventRunLoop.main.run(mode: .default, timeout: .milliseconds(10))
  print("run: returned")
} catch {
  print("run: \(error)")
}
do {
  try await EventRunLoop.main.submit { 1 }
  print("submit: returned")
} catch {
  print("submit: \(error)")
}
do {
  _ = try EventRunLoop.runMain { 1 }
  print("runMain: returned")
} catch {
  print("runMain: \(error)")
}
print("done")
