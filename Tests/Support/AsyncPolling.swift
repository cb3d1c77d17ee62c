/// `eventually` for async tests: polls `condition` every millisecond for up to `seconds`,
/// suspending between polls instead of blocking the thread. Tests run in parallel on the
/// cooperative pool (two threads on a two-core machine): a test that blocked its thread
/// while waiting for a task could wait for a task that no thread is left to run. The default
/// is long because, in the whole suite, synchronous tests can hold both threads of the pool
/// for many seconds before a task of this test gets one; it matters only when the condition
/// never comes true.
public func eventuallyAsync(_ seconds: Double = 60, _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
  while ContinuousClock.now < deadline {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(1))
  }
  return condition()
}
