import Glibc
import Testing

@testable import RunLoopCore

/// Regressions of the lock-free pass (the loop thread's snapshot of its sources and
/// providers, the edge-triggered wake-up descriptor, inert cancelled requests).
@Suite("Wake-ups and the pass cache")
struct WakeUpAndPassCacheTests {
  // The wake-up's event can come out of `epoll` in the same batch as a ready descriptor and
  // after it. If the descriptor's handler runs the loop nested before the outer pass has
  // acknowledged that wake-up, the wake flag stays set for the whole nested run, and every
  // wakeUp() made meanwhile (here, stop()'s) is skipped: the nested run sleeps on.
  @Test func aNestedRunStartedByADescriptorHandlerHearsWakeUps() throws {
    let pipe = Pipe()
    let nested = try onNewThread { loop -> RunResult? in
      let inner: LoopMode = "inner"
      try loop.add(CustomInputSource {}, mode: inner)
      let result = GuardedState<RunResult?>(nil)
      let watch = DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in
        _ = pipe.readByte()
        let value = try? loop.run(mode: inner, timeout: .seconds(5))
        result.withLock { $0 = value }
        loop.stop()
      }
      try loop.add(watch, mode: .default)
      // Nothing pending from the set-up.
      try loop.run(mode: .default, timeout: .zero)
      // The descriptor is ready first, then the wake-up: one `epoll` batch, in that order.
      pipe.writeByte()
      loop.wakeUp()
      let stopper = RunLoopThread(name: "stopper") { _ in
        guard eventually(5, { loop.currentMode == inner }) else { return }
        loop.stop()
      }
      try stopper.start()
      try loop.run(mode: .default, timeout: .seconds(10))
      try stopper.join()
      return result.withLock { $0 }
    }
    #expect(nested == .stopped)
  }

  // The loop thread keeps the sources of its mode between passes. One removed while the
  // loop sleeps must still be released at once, with what its call-outs captured (here the
  // write end of a pipe, closed by its owner's deinit, which the reader sees as a hang-up).
  @Test func aSourceRemovedWhileItsLoopSleepsIsReleased() throws {
    let worker = try startLoopThread(name: "sleeper")
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    defer { close(ends[0]) }
    try addRunAndRemoveSource(capturing: DescriptorOwner(ends[1]), on: loop)
    var poller = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
    #expect(poll(&poller, 1, 3000) == 1 && poller.revents & Int16(POLLHUP) != 0)
  }

  // The same between runs: a thread that ran its loop and then does other work must not
  // keep the sources it removed since.
  @Test func aSourceRemovedAfterItsLoopRanIsReleased() throws {
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    defer { close(ends[0]) }
    let (readEnd, writeEnd) = (ends[0], ends[1])
    // Checked on the loop's thread: its exit releases everything anyway.
    let hungUp = try onNewThread { loop -> Bool in
      try loop.add(CustomInputSource {}, mode: .default)
      do {
        let owner = DescriptorOwner(writeEnd)
        let source = CustomInputSource(name: "owner") { withExtendedLifetime(owner) {} }
        try loop.add(source, mode: .default)
        source.signal()
        try loop.run(mode: .default, timeout: .zero)
        loop.remove(source, mode: .default)
      }
      var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
      return poll(&poller, 1, 0) == 1 && poller.revents & Int16(POLLHUP) != 0
    }
    #expect(hungUp)
  }

  // A deadline source (a loop's timers, a port's timeouts) is listed in the pass snapshot:
  // one removed after the loop's last run must be released at once, not at the next run.
  @Test func aDeadlineSourceRemovedAfterItsLoopRanIsReleased() throws {
    let released = try onNewThread { loop -> Bool in
      try loop.add(CustomInputSource {}, mode: .default)
      weak var weakSource: IdleDeadlineSource?
      do {
        let source = IdleDeadlineSource()
        weakSource = source
        loop.addDeadlineSource(source)
        try loop.run(mode: .default, timeout: .zero)
        #expect(source.asked.withLock { $0 } > 0)
        loop.removeDeadlineSource(source)
      }
      return weakSource == nil
    }
    #expect(released)
  }

  private func addRunAndRemoveSource(capturing owner: DescriptorOwner, on loop: EventRunLoop)
    throws
  {
    let fired = GuardedState(false)
    let source = CustomInputSource(name: "owner") {
      withExtendedLifetime(owner) { fired.withLock { $0 = true } }
    }
    try loop.add(source, mode: .default)
    source.signalAndWakeUp()
    #expect(eventually(5) { fired.withLock { $0 } })
    // The loop goes back to sleep with the source in its snapshot.
    usleep(20_000)
    loop.remove(source, mode: .default)
  }

  // A cancelled request stays queued, inert. The loop must not keep such requests for as
  // long as it does not run their modes: a client that queues and cancels work for a mode
  // the loop rarely runs would otherwise grow the queue without bound.
  @Test func cancelledRequestsForAModeTheLoopDoesNotRunAreReleased() throws {
    let worker = try startLoopThread(name: "runner")
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    weak var cancelled: PerformRequest?
    do {
      let request = loop.perform(inModes: ["elsewhere"]) {}
      cancelled = request
      #expect(request.cancel())
    }
    // The loop takes a batch in its own mode.
    try loop.performAndWait(inModes: [.default]) {}
    #expect(eventually(3) { cancelled == nil })
  }
}

/// Closes a descriptor when released.
private final class DescriptorOwner: Sendable {
  let descriptor: Int32

  init(_ descriptor: Int32) {
    self.descriptor = descriptor
  }

  deinit {
    close(descriptor)
  }
}

/// A deadline source with nothing scheduled that counts how often the loop asks it.
private final class IdleDeadlineSource: DeadlineSource {
  let asked = GuardedState(0)

  func hasItems(in mode: ActiveMode) -> Bool {
    asked.withLock { $0 += 1 }
    return false
  }

  func nextDeadline(in mode: ActiveMode) -> Int64? {
    asked.withLock { $0 += 1 }
    return nil
  }

  func fireDue(in mode: ActiveMode, now: Int64, on loop: EventRunLoop) {
    asked.withLock { $0 += 1 }
  }
}
