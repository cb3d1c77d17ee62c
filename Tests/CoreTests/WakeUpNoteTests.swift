import Dispatch
import RunLoopCore
import Testing

/// A wake-up made while the loop is in a pass notes itself in the waker's state, and the pass's
/// sleep takes the note instead of blocking. Counted: the `write` calls of the thread that
/// wakes (from `/proc/thread-self/io`), which an `eventfd` wake-up makes, and the loop's
/// `epoll_wait` calls, which a sleep cut short in a mode without descriptors does not make.
@Suite("A wake-up during a pass is a note")
struct WakeUpNoteTests {
  /// A loop with one idle source whose first `beforeWaiting` wakes the loop (counting the
  /// writes that makes) and whose second stops it; returns the activities, the result and
  /// the writes and the loop's `epoll_wait` calls. A watchdog stops the loop after 10 s, so
  /// a sleep that blocked through the wake-up shows as a wrong log, not as a hang.
  private func runWakingInBeforeWaiting(timeout: Duration?) throws -> (
    log: [String], writes: UInt64?, epollWaits: UInt64
  ) {
    let finished = DispatchSemaphore(value: 0)
    let owner = GuardedState<EventRunLoop?>(nil)
    let watchdog = RunLoopThread(name: "watchdog") { _ in
      if finished.wait(timeout: .now() + .seconds(10)) == .timedOut {
        owner.withLock { $0 }?.stop()
      }
    }
    try watchdog.start()
    defer { try? watchdog.join() }
    return try onNewThread { loop -> ([String], UInt64?, UInt64) in
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
      let waitsBefore = loop.epollWaits
      let result = try loop.run(mode: .default, timeout: timeout)
      recorder.mark("result:\(result)")
      return (recorder.log, writes.withLock { $0 }, loop.epollWaits - waitsBefore)
    }
  }

  // With a timeout the sleep would be in `epoll`; with none, on the loop's word. Either way
  // the wake-up made in `beforeWaiting` writes nothing, and the sleep after it does not
  // block and, the mode watching no descriptor, makes no `epoll_wait` call: the second pass
  // follows at once, and its stop ends the run.
  @Test(
    .enabled(if: writeSystemCallsOfThisThread() != nil, "needs /proc/thread-self/io"),
    arguments: [Duration.seconds(60), nil])
  func aWakeUpDuringAPassWritesNothingAndTheNextSleepNeitherBlocksNorCallsEpoll(timeout: Duration?)
    throws
  {
    let (log, writes, epollWaits) = try runWakingInBeforeWaiting(timeout: timeout)
    #expect(writes == 0)
    #expect(epollWaits == 0)
    #expect(
      log == [
        "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
        "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        "result:stopped",
      ])
  }
}
