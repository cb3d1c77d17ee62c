import CPeers
import Glibc
import RunLoopCore
import RunLoopTimers

/// A loop thread of ours that runs its loop (kept alive by an idle source) until stopped.
///
/// Its runs have no timeout, as the peers' loops run (`uv_run`, `sd_event_loop`,
/// `g_main_loop_run`, NIO's loops): until told to stop. With no timeout and no descriptor to
/// watch, a run sleeps on its loop's wake word rather than in `epoll` (see the Core's
/// `WakeState`); the C peers have no such sleep.
final class OurLoopThread: Sendable {
  let thread: RunLoopThread

  init(name: String) throws {
    thread = RunLoopThread(name: name) { thread in
      let loop = EventRunLoop.current
      try loop.add(CustomInputSource(name: "keep-alive") {}, mode: .default)
      while !thread.isCancelled {
        _ = try loop.run(mode: .default, timeout: nil)
      }
    }
    try thread.start()
  }

  var loop: EventRunLoop { thread.runLoop }

  /// What its thread has used so far.
  func usage() throws -> peers_thread_usage { try threadUsage(of: loop) }

  /// Stops the loop and joins its thread.
  /// The stop goes through a perform request: a stop made between two runs would be
  /// forgotten (as in CoreFoundation), and the next run, with no timeout, would never end.
  func stop() throws {
    thread.cancel()
    let loop = loop
    loop.perform { loop.stop() }
    try thread.join()
  }
}

/// Our loop's side of each piece of work.
enum OurSide {
  /// Nanoseconds for `passes` zero-timeout runs of a loop with one idle source; with
  /// `watchingADescriptor`, the loop also watches a pipe that never becomes readable.
  static func emptyPasses(_ passes: Int, watchingADescriptor: Bool = false) throws -> UInt64 {
    try onNewThread {
      let loop = EventRunLoop.current
      try loop.add(CustomInputSource(name: "idle") {}, mode: .default)
      // An idle pipe's read end, watched only when asked: it never becomes readable.
      var ends: [Int32] = [-1, -1]
      if watchingADescriptor {
        guard pipe(&ends) == 0 else {
          throw SideFailure(description: "our empty passes: pipe() failed, errno \(errno)")
        }
      }
      let watch = watchingADescriptor ? DescriptorWatch(fileDescriptor: ends[0]) { _ in } : nil
      defer {
        watch?.invalidate()
        for end in ends where end >= 0 { close(end) }
      }
      if let watch { try loop.add(watch, mode: .default) }
      for _ in 0..<1000 { try loop.run(mode: .default, timeout: .zero) }
      let start = nanosNow()
      for _ in 0..<passes { try loop.run(mode: .default, timeout: .zero) }
      return nanosNow() - start
    }
  }

  /// Nanoseconds to schedule one-shot timers `offsets` seconds ahead, then cancel them all.
  /// Each offset becomes whole nanoseconds the way NIO's side converts it (and the C sides
  /// take whole milliseconds): `Duration.seconds(_: Double)` scales through 128-bit
  /// arithmetic, about 340 instructions a timer that are not the scheduler's work.
  static func timerChurn(_ offsets: [Double]) throws -> UInt64 {
    try onNewThread {
      let loop = EventRunLoop.current
      var timers: [LoopTimer] = []
      timers.reserveCapacity(offsets.count)
      let start = nanosNow()
      let now = ContinuousClock.now
      for offset in offsets {
        let fireDate = now + .nanoseconds(Int64(offset * 1e9))
        let timer = try LoopTimer(fireAt: fireDate, name: "churn") { _ in }
        try loop.add(timer, mode: .default)
        timers.append(timer)
      }
      for timer in timers { timer.invalidate() }
      return nanosNow() - start
    }
  }

  /// Heap bytes per scheduled one-shot timer, `count` timers scheduled far ahead.
  static func timerMemory(_ count: Int) throws -> Double {
    try onNewThread {
      let loop = EventRunLoop.current
      let now = ContinuousClock.now
      let warm = try LoopTimer(fireAt: now + .seconds(7200), name: "warm") { _ in }
      try loop.add(warm, mode: .default)
      var timers: [LoopTimer] = []
      timers.reserveCapacity(count)
      let before = peers_heap_bytes_in_use()
      for index in 0..<count {
        let timer = try LoopTimer(fireAt: now + .seconds(3600 + index), name: "m") { _ in }
        try loop.add(timer, mode: .default)
        timers.append(timer)
      }
      let perTimer = peers_heap_growth(before) / Double(count)
      for timer in timers { timer.invalidate() }
      warm.invalidate()
      return perTimer
    }
  }

  /// Two loops hand a perform request back and forth `roundTrips` times.
  static func pingPong(_ roundTrips: Int) throws -> ThreadedSample {
    let a = try OurLoopThread(name: "ping")
    let b = try OurLoopThread(name: "pong")
    defer {
      try? a.stop()
      try? b.stop()
    }
    final class Ball: @unchecked Sendable {
      var remaining: Int
      let done = Latch()
      let a: EventRunLoop
      let b: EventRunLoop
      init(_ count: Int, _ a: EventRunLoop, _ b: EventRunLoop) {
        (remaining, self.a, self.b) = (count, a, b)
      }
      func atA() {
        remaining -= 1
        if remaining == 0 { return done.signal() }
        b.perform { self.atB() }
      }
      func atB() { a.perform { self.atA() } }
    }
    let ball = Ball(roundTrips, a.loop, b.loop)
    let before = try a.usage() + b.usage()
    let start = nanosNow()
    b.loop.perform { ball.atB() }
    try ball.done.wait(for: "our ping-pong")
    let elapsed = nanosNow() - start
    return ThreadedSample(nanoseconds: elapsed, before: before, after: try a.usage() + b.usage())
  }
}

extension OurSide {
  /// Round trips per second of `performAndWait { }` from a plain thread.
  static func waitedPerform(_ count: Int) throws -> Double {
    let worker = try OurLoopThread(name: "perform")
    defer { try? worker.stop() }
    let loop = worker.loop
    let start = nanosNow()
    for _ in 0..<count { try loop.performAndWait {} }
    return Double(count) / (Double(nanosNow() - start) / 1e9)
  }
}

/// What the thread of `loop` has used so far, read on that thread.
func threadUsage(of loop: EventRunLoop) throws -> peers_thread_usage {
  nonisolated(unsafe) var usage = peers_thread_usage()
  try loop.performAndWait { usage = peers_thread_usage_now() }
  return usage
}
