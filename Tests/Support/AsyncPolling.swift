/// `eventually` for async tests: polls `condition` about once a millisecond, suspending
/// between polls instead of blocking the thread, and gives up after `seconds` worth of polls.
///
/// The limit counts polls, not time on the clock. Tests run in parallel on the cooperative
/// pool (two threads on a two-core machine), and the suite enqueues every test at once: a
/// task this test starts, and each of this test's own resumptions, wait their turn behind
/// every test that has not started yet, and synchronous tests hold a thread for as long as
/// they run. In the parallel ThreadSanitizer run that wait passed a 60-second clock deadline
/// while the task being waited for had not had a turn either. A poll only happens when this
/// test gets a turn, and a task it started is ahead of its next poll in the queue, so a count
/// of polls fails only when the condition stays false while the test itself keeps running.
public func eventuallyAsync(_ seconds: Double = 60, _ condition: () -> Bool) async -> Bool {
  for _ in 0..<Int(seconds * 1000) {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(1))
  }
  return condition()
}
