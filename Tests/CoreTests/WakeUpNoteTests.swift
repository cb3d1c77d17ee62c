import Dispatch
import RunLoopCore
import Testing

/// A wake-up made while the loop is in a pass notes itself in the wake state: no system
/// call (no `eventfd` write, no `futex` wake), and the pass's sleep takes the note instead
/// of blocking. Writes are counted from `/proc/thread-self/io` on the thread that wakes.
@Suite("A wake-up during a pass is a note")
struct WakeUpNoteTests {
  /// A loop with one idle source whose first `beforeWaiting` wakes the loop (counting the
  /// writes that makes) and whose second stops it; returns the activities, the result and
  /// the writes. A watchdog stops the loop after 10 s, so a sleep that blocked through the
  /// wake-up shows as a wrong log, not as a hang.
  private func runWakingInBeforeWaiting(timeout: Duration?) throws -> ([String], UInt64?) {
    let finished = DispatchSemaphore(value: 0)
    let owner = GuardedState<EventRunLoop?>(nil)
    let watchdog = RunLoopThread(name: "watchdog") { _ in
      if finished.wait(timeout: .now() + .seconds(10)) == .timedOut {
        owner.withLock { $0 }?.stop()
      }
    }
    try watchdog.start()
    defer { try? watchdog.join() }
    return try onNewThread { loop -> ([String], UInt64?) in
      defer { finished.signal() }
      owner.withLock { $0 = loop }
      let recorder = Recorder()
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      loop.addInstrument(recorder)
      let writes = GuardedState<UInt64?>(nil)
      loop.addInstrument(
        CoreFoundationFidelityTests.Hook.beforeWaiting(
          first: {
            let before = writeSystemCallsOfThisThread()
            loop.wakeUp()
            let after = writeSystemCallsOfThisThread()
            writes.withLock { $0 = before.flatMap { before in after.map { $0 - before } } }
          },
          later: loop.stop))  // a wake-up too, made during the pass
      let result = try loop.run(mode: .default, timeout: timeout)
      recorder.mark("result:\(result)")
      return (recorder.log, writes.withLock { $0 })
    }
  }

  // With a timeout the sleep would be in `epoll`; with none, on the loop's word. Either way
  // the wake-up made in `beforeWaiting` writes nothing, and the sleep after it does not
  // block: the second pass follows at once, and its stop ends the run.
  @Test(
    .enabled(if: writeSystemCallsOfThisThread() != nil, "needs /proc/thread-self/io"),
    arguments: [Duration.seconds(60), nil])
  func aWakeUpDuringAPassWritesNothingAndTheNextSleepDoesNotBlock(timeout: Duration?) throws {
    let (log, writes) = try runWakingInBeforeWaiting(timeout: timeout)
    #expect(writes == 0)
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
        "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:stopped",
      ])
  }
}
