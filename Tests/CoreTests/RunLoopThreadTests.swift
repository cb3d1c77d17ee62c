import Dispatch
import Glibc
import RunLoopCore
import Testing

private struct EntryFailure: Error, CustomStringConvertible {
  var description: String { "the entry closure gave up" }
}

@Suite("Threads that own run loops")
struct RunLoopThreadTests {
  @Test func threadHasItsNameAndItsOwnRunLoop() throws {
    let seen = GuardedState<(String?, Bool)?>(nil)
    let thread = RunLoopThread(name: "a-very-long-thread-name") { thread in
      let name = procFileText("/proc/thread-self/comm").map { String($0.dropLast()) }
      seen.withLock { $0 = (name, EventRunLoop.current === thread.runLoop) }
    }
    try thread.start()
    try thread.join()
    let (kernelName, ownLoop) = try #require(seen.withLock { $0 })
    #expect(kernelName == "a-very-long-thr")
    #expect(ownLoop)
    #expect(thread.state == .finished)
  }

  @Test func startingTwiceOrJoiningTwiceIsAnError() throws {
    let thread = RunLoopThread(name: "once") { _ in }
    try thread.start()
    #expect(throws: RunLoopError.invalidState("")) { try thread.start() }
    try thread.join()
    #expect(throws: RunLoopError.invalidState("")) { try thread.join() }
  }

  @Test func aThreadJoiningItselfIsAnErrorNotADeadlock() throws {
    let failure = GuardedState<RunLoopError?>(nil)
    let tried = DispatchSemaphore(value: 0)
    let thread = RunLoopThread(name: "self-join") { thread in
      do throws(RunLoopError) { try thread.join() } catch { failure.withLock { $0 = error } }
      tried.signal()
    }
    try thread.start()
    // Joined from here only after its own try, which must leave the join to this thread.
    tried.wait()
    try thread.join()
    let error = try #require(failure.withLock { $0 })
    #expect(error.code == .invalidState)
    #expect(error.message.contains("cannot join itself"))
  }

  @Test func joiningAThreadNeverStartedIsAnError() {
    let thread = RunLoopThread(name: "never") { _ in }
    #expect(throws: RunLoopError.invalidState("")) { try thread.join() }
  }

  @Test func stackSizeIsAppliedAndATooSmallOneIsAnError() throws {
    let used = GuardedState(0)
    let thread = RunLoopThread(name: "big-stack", stackSize: 4 << 20) { _ in
      used.withLock { $0 = RunLoopThread.currentStackSize }
    }
    try thread.start()
    try thread.join()
    #expect(used.withLock { $0 } >= 4 << 20)

    let tiny = RunLoopThread(name: "tiny", stackSize: 1024) { _ in
      Issue.record("must not run")
    }
    #expect(throws: RunLoopError.invalidArgument("")) { try tiny.start() }
  }

  @Test func priorityTheSystemRefusesIsAnErrorAndTheEntryNeverRuns() throws {
    let ran = GuardedState(false)
    let thread = RunLoopThread(name: "rt", priority: .realtimeFIFO(1000)) { _ in
      ran.withLock { $0 = true }
    }
    #expect(throws: RunLoopError(code: .systemCallFailed, message: "")) { try thread.start() }
    #expect(!ran.withLock { $0 })
    let outOfRange = RunLoopThread(name: "nice", priority: .nice(40)) { _ in }
    #expect(throws: RunLoopError.invalidArgument("")) { try outOfRange.start() }
  }

  @Test func niceValueIsApplied() throws {
    let observed = GuardedState<Int32>(-100)
    let thread = RunLoopThread(name: "nice", priority: .nice(7)) { thread in
      errno = 0
      let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(thread.threadID!))
      observed.withLock { $0 = value }
    }
    try thread.start()
    try thread.join()
    #expect(observed.withLock { $0 } == 7)
  }

  @Test func detachedThreadRunsAndCannotBeJoined() throws {
    let done = GuardedState(false)
    let thread = RunLoopThread(name: "detached", detached: true) { _ in
      done.withLock { $0 = true }
    }
    try thread.start()
    #expect(throws: RunLoopError.invalidState("")) { try thread.join() }
    #expect(eventually { done.withLock { $0 } })
  }

  @Test func threadDictionaryIsSharedSafely() throws {
    let thread = RunLoopThread(name: "dictionary") { thread in
      while thread.withThreadDictionary({ $0["go"] == nil }) { usleep(200) }
      thread.withThreadDictionary { $0["answer"] = 42 }
    }
    try thread.start()
    thread.withThreadDictionary { $0["go"] = true }
    try thread.join()
    #expect(thread.withThreadDictionary { $0["answer"] as? Int } == 42)
  }

  @Test func startingAThreadMakesTheProcessMultiThreaded() throws {
    try onNewThread { _ in }
    #expect(RunLoopThread.isMultiThreaded)
  }

  @Test func errorFromTheEntryIsReportedAndJoinThrowsIt() throws {
    let reported = GuardedState<[String]>([])
    let previous = RunLoopThread.failureHandler
    RunLoopThread.failureHandler = { thread, error in
      if thread.name == "failing" {
        reported.withLock { $0.append("\(error)") }
      } else {
        previous(thread, error)
      }
    }
    defer { RunLoopThread.failureHandler = previous }
    let thread = RunLoopThread(name: "failing") { _ in throw EntryFailure() }
    try thread.start()
    #expect(throws: RunLoopError(code: .threadFailed, message: "")) { try thread.join() }
    #expect(thread.failure is EntryFailure)
    #expect(reported.withLock { $0 } == ["the entry closure gave up"])
  }

  @Test func workerDoingChunksExitsWhenToldByAnotherThread() throws {
    // The guide's "Terminating a Thread" pattern: do a chunk, run the loop once with a zero
    // timeout so that input sources get a chance, check the exit flag the source set.
    let chunks = GuardedState(0)
    let worker = RunLoopThread(name: "chunker") { thread in
      let loop = thread.runLoop
      let exitSource = CustomInputSource(name: "exit") {
        thread.withThreadDictionary { $0["exitNow"] = true }
      }
      try loop.add(exitSource, mode: .default)
      thread.withThreadDictionary { $0["exitSource"] = exitSource }
      var exitNow = false
      while !exitNow {
        chunks.withLock { $0 += 1 }  // one chunk of work
        usleep(100)
        try loop.run(mode: .default, timeout: .zero)
        exitNow = thread.withThreadDictionary { $0["exitNow"] as? Bool ?? false }
      }
    }
    try worker.start()
    #expect(eventually { chunks.withLock { $0 } >= 3 })
    let exitSource = try #require(
      worker.withThreadDictionary { $0["exitSource"] } as? CustomInputSource)
    exitSource.signal()
    try worker.join()
    #expect(worker.state == .finished)
  }
}
