import Dispatch
import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTestSupport
import Synchronization
import Testing

@Suite("In-process ports under a flood")
struct InProcessPortFairnessTests {
  // Two threads keep a port's queue full while another thread signals a custom source of
  // the same loop, waiting for each to run: every signal is served. A call-out that took
  // the queue again and again while the senders refilled it never ended, and the source
  // never ran.
  @Test func aFloodedPortDoesNotStarveTheLoopsOtherSources() throws {
    let received = Atomic<Int>(0)
    let port = try InProcessPort(name: "flooded", capacity: 64) { _ in
      // A handler that waits a little (as one doing I/O would): the senders get the CPU
      // and refill the queue before the batch is done.
      usleep(100)
      received.add(1, ordering: .relaxed)
    }
    let served = Atomic<Int>(0)
    let source = CustomInputSource(name: "other work") { served.add(1, ordering: .releasing) }
    let thread = try startLoopThread("flooded-loop") { loop in
      try port.add(to: loop, mode: .default)
      try loop.add(source, mode: .default)
    }
    let flooding = Atomic<Bool>(true)
    let senders = DispatchGroup()
    for _ in 0..<2 {
      senders.enter()
      DispatchQueue.global().async {
        while flooding.load(ordering: .relaxed) {
          try? port.send(msgid: 1, before: .now + .milliseconds(100))
        }
        senders.leave()
      }
    }
    // Let the flood build up before the first signal.
    #expect(eventually(10) { received.load(ordering: .relaxed) > 200 })
    var servedInTime = 0
    for round in 1...20 {
      source.signalAndWakeUp()
      let deadline = ContinuousClock.now + .seconds(2)
      while served.load(ordering: .acquiring) < round, ContinuousClock.now < deadline {
        usleep(200)
      }
      if served.load(ordering: .acquiring) >= round { servedInTime += 1 } else { break }
    }
    flooding.store(false, ordering: .relaxed)
    #expect(senders.wait(timeout: .now() + 10) == .success)
    #expect(servedInTime == 20, "the source ran \(servedInTime) times of 20 during the flood")
    try finish(thread)
  }

  // A port whose handler sends it the next message stays ready on every pass, as one its
  // senders keep full does. Runs that each handle one source (`run(mode:before:)`) take it
  // in turn with a signal that arrives meanwhile: `epoll` reports the two in the same order
  // every time, and the port, reported first, was chosen by every run.
  @Test func aPortThatStaysReadyTakesTurnsWithASignalInRunsThatHandleOneSource() throws {
    let (messages, signals) = try onNewThread("busy port") { loop -> (Int, Int) in
      let messages = Atomic<Int>(0)
      let signals = Atomic<Int>(0)
      let portBox = GuardedState<InProcessPort?>(nil)
      let port = try InProcessPort(name: "always ready", capacity: 4) { _ in
        messages.add(1, ordering: .relaxed)
        try? portBox.withLock { $0 }?.send(msgid: 1, before: .now)
      }
      portBox.withLock { $0 = port }
      // Thread-directed at this thread, which blocks it (as the test's threads all do): it
      // waits for the source's signalfd. No other test uses SIGUSR2.
      let source = try SignalSource(signals: [SIGUSR2]) { _ in signals.add(1, ordering: .relaxed) }
      try port.add(to: loop, mode: .default)
      try source.add(to: loop, mode: .default)
      try port.send(msgid: 1, before: .now)
      pthread_kill(pthread_self(), SIGUSR2)
      for _ in 0..<6 {
        #expect(try loop.run(mode: .default, before: .now + .seconds(10)))
      }
      source.invalidate()
      port.invalidate()
      return (messages.load(ordering: .relaxed), signals.load(ordering: .relaxed))
    }
    #expect(signals == 1)
    #expect(messages == 5)
  }
}
