import Glibc
import RunLoopCore

extension Scenarios {
  /// What the raw thread's routine reports back: its pthread, and whether it is a
  /// RunLoopThread.
  final class RawThreadReport: Sendable {
    let ran = GuardedState<(thread: pthread_t, hadLoop: Bool)?>(nil)
  }

  static let rawThreads = Scenario(
    name: "raw-threads",
    title: "Listing 2-1: a detached POSIX thread made by hand, beside RunLoopThread",
    guide: "Thread Management > Creating a Thread > Using POSIX Threads (Listing 2-1)",
    article: "ThreadManagement.md, Creating and starting a thread"
  ) { narration in
    narration.say("Listing 2-1: pthread_attr_init, pthread_attr_setdetachstate(DETACHED),")
    narration.say("pthread_create with a routine and a context pointer, pthread_attr_destroy.")
    let report = RawThreadReport()
    var attributes = pthread_attr_t()
    guard pthread_attr_init(&attributes) == 0 else {
      narration.expect(false, "pthread_attr_init succeeded")
      return
    }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    // The routine is a C function: it gets its context as a raw pointer, retained here and
    // released by the routine.
    let context = Unmanaged.passRetained(report).toOpaque()
    let created = pthread_create(
      &thread, &attributes,
      { context in
        let report = Unmanaged<RawThreadReport>.fromOpaque(context!).takeRetainedValue()
        // A raw thread has no loop until something asks for one (EventRunLoop.current).
        let hadLoop = RunLoopThread.current != nil
        report.ran.withLock { $0 = (pthread_self(), hadLoop) }
        return nil
      }, context)
    pthread_attr_destroy(&attributes)
    narration.expect(created == 0, "pthread_create made a detached thread (\(created))")
    if created != 0 { Unmanaged<RawThreadReport>.fromOpaque(context).release() }
    // A detached thread cannot be joined: wait for its report.
    let deadline = ContinuousClock.now + .seconds(5)
    while report.ran.withLock({ $0 }) == nil, ContinuousClock.now < deadline { usleep(1_000) }
    let raw = report.ran.withLock { $0 }
    narration.event("the raw thread's routine ran")
    narration.expect(
      raw.map { pthread_equal($0.thread, pthread_self()) == 0 } ?? false,
      "its routine ran on a thread of its own")
    narration.expect(
      raw?.hadLoop == false, "it is no RunLoopThread: no loop, no name, nothing to join")

    narration.say("RunLoopThread does the same calls, plus a name, a loop that exists before")
    narration.say("the entry runs, errors instead of silence, and join():")
    let entrySawItsLoop = GuardedState(false)
    let worker = RunLoopThread(name: "made-for-you") { thread in
      entrySawItsLoop.withLock { $0 = thread.runLoop === EventRunLoop.current }
      narration.event("entry runs on '\(thread.name)', its loop ready")
    }
    try worker.start()
    try worker.join()
    narration.expect(
      entrySawItsLoop.withLock { $0 }, "the RunLoopThread's loop was there when its entry ran")
  }
}
