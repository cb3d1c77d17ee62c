import CBenchSupport
import CRunLoopLinux
import CoreFoundation
import Foundation
import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTimers
import RunLoopTracing
import Synchronization

// MARK: ping-pong

/// Allocations (all threads) during the latest ping-pong run of each side.
let pingPongAllocations = Atomic<UInt64>(0)
let cfPingPongAllocations = Atomic<UInt64>(0)
/// Sleeps that polled, and of those the ones that caught work, on both loops, during the
/// latest ping-pong run of ours.
let pingPongSpins = Atomic<UInt64>(0)
let pingPongSpinsCaught = Atomic<UInt64>(0)
/// CPU time of the whole process per round trip, in nanoseconds, during the latest ping-pong
/// run of each side: what polling before sleep costs, beside what blocking costs.
let pingPongCPU = Atomic<UInt64>(0)
let cfPingPongCPU = Atomic<UInt64>(0)
let floorPingPongCPU = Atomic<UInt64>(0)

/// Bounces a perform request between two loops `roundTrips` times; returns round trips/s.
/// `spinLimit` replaces the loops' default limit of polling before sleep when given.
func ourPingPong(roundTrips: Int, spinLimit: Duration? = nil) throws -> Double {
  let a = try OurLoopThread(name: "ping")
  let b = try OurLoopThread(name: "pong")
  if let spinLimit {
    a.loop.spinLimit = spinLimit
    b.loop.spinLimit = spinLimit
  }
  defer {
    try? a.stop()
    try? b.stop()
  }
  final class Ball: @unchecked Sendable {
    // Unchecked: `remaining` is touched by one loop at a time, the ball being passed between
    // them by perform (whose queue orders the accesses).
    var remaining: Int
    let done = Latch()
    let a: EventRunLoop
    let b: EventRunLoop
    init(_ count: Int, _ a: EventRunLoop, _ b: EventRunLoop) {
      remaining = count
      self.a = a
      self.b = b
    }
    func atA() {
      remaining -= 1
      if remaining == 0 { return done.signal() }
      b.perform { self.atB() }
    }
    func atB() { a.perform { self.atA() } }
  }
  let ball = Ball(roundTrips, a.loop, b.loop)
  let allocations = cbench_process_allocations()
  let spinsBefore = [a.loop.spinStatistics, b.loop.spinStatistics]
  let cpu = processCPUNanoseconds()
  let start = nanosNow()
  b.loop.perform { ball.atB() }
  ball.done.wait()
  let rate = Double(roundTrips) / seconds(since: start)
  pingPongCPU.store((processCPUNanoseconds() - cpu) / UInt64(roundTrips), ordering: .relaxed)
  pingPongAllocations.store(cbench_process_allocations() - allocations, ordering: .relaxed)
  let spinsAfter = [a.loop.spinStatistics, b.loop.spinStatistics]
  pingPongSpins.store(
    zip(spinsAfter, spinsBefore).map { $0.spins - $1.spins }.reduce(0, +), ordering: .relaxed)
  pingPongSpinsCaught.store(
    zip(spinsAfter, spinsBefore).map { $0.caught - $1.caught }.reduce(0, +), ordering: .relaxed)
  return rate
}

func cfPingPong(roundTrips: Int) -> Double {
  let a = CFLoopThread(name: "cf-ping")
  let b = CFLoopThread(name: "cf-pong")
  defer {
    a.stop()
    b.stop()
  }
  final class Ball: @unchecked Sendable {
    // Unchecked: `remaining` is touched by one loop at a time, the ball being passed between
    // them by perform (whose queue orders the accesses).
    var remaining: Int
    let done = Latch()
    let a: CFRunLoop
    let b: CFRunLoop
    init(_ count: Int, _ a: CFRunLoop, _ b: CFRunLoop) {
      remaining = count
      self.a = a
      self.b = b
    }
    func send(to loop: CFRunLoop, _ body: @escaping () -> Void) {
      CFRunLoopPerformBlock(loop, cfDefaultMode, body)
      CFRunLoopWakeUp(loop)
    }
    func atA() {
      remaining -= 1
      if remaining == 0 { return done.signal() }
      send(to: b) { self.atB() }
    }
    func atB() { send(to: a) { self.atA() } }
  }
  let ball = Ball(roundTrips, a.runLoop, b.runLoop)
  let allocations = cbench_process_allocations()
  let cpu = processCPUNanoseconds()
  let start = nanosNow()
  ball.send(to: b.runLoop) { ball.atB() }
  ball.done.wait()
  let rate = Double(roundTrips) / seconds(since: start)
  cfPingPongCPU.store((processCPUNanoseconds() - cpu) / UInt64(roundTrips), ordering: .relaxed)
  cfPingPongAllocations.store(cbench_process_allocations() - allocations, ordering: .relaxed)
  return rate
}

/// The floor: two threads, each blocked in epoll_wait on its own eventfd, writing the other's.
/// As lean as the bare calls allow: each thread has one event buffer, and the eventfds are
/// edge-triggered (as the loop's wake-up eventfd is), so a hop is one `write` and one
/// `epoll_wait`, with no `read`.
func floorPingPong(roundTrips: Int) -> Double {
  let eventA = eventfd(0, Int32(EFD_CLOEXEC))
  let eventB = eventfd(0, Int32(EFD_CLOEXEC))
  let pollA = epoll_create1(Int32(EPOLL_CLOEXEC))
  let pollB = epoll_create1(Int32(EPOLL_CLOEXEC))
  let mask = EPOLLIN.rawValue | EPOLLET.rawValue
  _ = crl_epoll_ctl(pollA, EPOLL_CTL_ADD, eventA, mask, 1)
  _ = crl_epoll_ctl(pollB, EPOLL_CTL_ADD, eventB, mask, 1)
  defer { for fd in [eventA, eventB, pollA, pollB] { close(fd) } }
  func wait(_ poll: Int32, _ buffer: UnsafeMutableRawPointer) {
    while epoll_wait(poll, buffer.assumingMemoryBound(to: epoll_event.self), 4, -1) < 1 {}
  }
  func poke(_ event: Int32) {
    var one: UInt64 = 1
    _ = write(event, &one, 8)
  }
  // The floor's epoll_event buffer: raw memory of the C struct's size (the shim knows the
  // packed layout), one per thread, freed by its thread.
  func eventBuffer() -> UnsafeMutableRawPointer {
    .allocate(byteCount: crl_epoll_event_size() * 4, alignment: 8)
  }
  let pong = BareThread {
    let buffer = eventBuffer()
    defer { buffer.deallocate() }
    for _ in 0..<roundTrips {
      wait(pollB, buffer)
      poke(eventA)
    }
  }
  let buffer = eventBuffer()
  defer { buffer.deallocate() }
  let cpu = processCPUNanoseconds()
  let start = nanosNow()
  for _ in 0..<roundTrips {
    poke(eventB)
    wait(pollA, buffer)
  }
  let rate = Double(roundTrips) / seconds(since: start)
  pong.join()
  floorPingPongCPU.store((processCPUNanoseconds() - cpu) / UInt64(roundTrips), ordering: .relaxed)
  return rate
}

// MARK: signal pummel

struct PummelResult {
  var signalsPerSecond: Double
  var calloutsPerSecond: Double
}

func ourPummel(seconds duration: Double) throws -> PummelResult {
  let callouts = Counter()
  let source = CustomInputSource(name: "pummel") { callouts.add() }
  let thread = try OurLoopThread(name: "pummel") { loop in try loop.add(source, mode: .default) }
  var signals = 0
  let start = nanosNow()
  let end = start + UInt64(duration * 1e9)
  while true {
    for _ in 0..<64 { source.signalAndWakeUp() }
    signals += 64
    if nanosNow() >= end { break }
  }
  let elapsed = seconds(since: start)
  let calls = callouts.value
  try thread.stop()
  return PummelResult(
    signalsPerSecond: Double(signals) / elapsed, calloutsPerSecond: Double(calls) / elapsed)
}

func cfPummel(seconds duration: Double) -> PummelResult {
  let callouts = Counter()
  let source = makeCFSource { callouts.add() }
  let thread = CFLoopThread(name: "cf-pummel") { loop in
    CFRunLoopAddSource(loop, source, cfDefaultMode)
  }
  let loop = thread.runLoop
  var signals = 0
  let start = nanosNow()
  let end = start + UInt64(duration * 1e9)
  while true {
    for _ in 0..<64 {
      CFRunLoopSourceSignal(source)
      CFRunLoopWakeUp(loop)
    }
    signals += 64
    if nanosNow() >= end { break }
  }
  let elapsed = seconds(since: start)
  let calls = callouts.value
  thread.stop()
  return PummelResult(
    signalsPerSecond: Double(signals) / elapsed, calloutsPerSecond: Double(calls) / elapsed)
}

// MARK: empty passes

func ourEmptyPasses(_ passes: Int) throws -> Double {
  try onFreshThread {
    let loop = EventRunLoop.current
    try loop.add(CustomInputSource(name: "idle") {}, mode: .default)
    for _ in 0..<1000 { try loop.run(mode: .default, timeout: .zero) }
    let start = nanosNow()
    for _ in 0..<passes { try loop.run(mode: .default, timeout: .zero) }
    return Double(passes) / seconds(since: start)
  }
}

func cfEmptyPasses(_ passes: Int) throws -> Double {
  try onFreshThread {
    let loop = CFRunLoopGetCurrent()
    CFRunLoopAddSource(loop, makeCFSource {}, cfDefaultMode)
    for _ in 0..<1000 { _ = CFRunLoopRunInMode(cfDefaultMode, 0, false) }
    let start = nanosNow()
    for _ in 0..<passes { _ = CFRunLoopRunInMode(cfDefaultMode, 0, false) }
    return Double(passes) / seconds(since: start)
  }
}

/// The floor of a pass: one epoll_wait with a zero timeout on an epoll holding an eventfd.
func floorEmptyPasses(_ passes: Int) -> Double {
  let event = eventfd(0, Int32(EFD_CLOEXEC))
  let poll = epoll_create1(Int32(EPOLL_CLOEXEC))
  _ = crl_epoll_ctl(poll, EPOLL_CTL_ADD, event, EPOLLIN.rawValue, 1)
  defer {
    close(event)
    close(poll)
  }
  var events = [epoll_event](repeating: epoll_event(), count: 8)
  let start = nanosNow()
  for _ in 0..<passes { _ = epoll_wait(poll, &events, 8, 0) }
  return Double(passes) / seconds(since: start)
}

// MARK: idle

/// Counts the activities a loop reports (an instrument: it sees every pass, no mode needed).
final class ActivityCounter: RunLoopInstrument, @unchecked Sendable {
  // Unchecked: its counts are written on the loop's thread and read after the loop stopped.
  var interests: InstrumentInterests { [.activities, .sleeps] }
  var passes = 0
  var wakeUps = 0
  var sleeps = 0
  func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    if activity == .beforeTimers { passes += 1 }
    if activity == .afterWaiting { wakeUps += 1 }
  }
  func runLoop(
    _ loop: EventRunLoop, didSleepFrom start: ContinuousClock.Instant,
    to end: ContinuousClock.Instant, _ info: LoopPassInfo
  ) { sleeps += 1 }
}

struct IdleResult {
  var extraPasses: Int
  var extraWakeUps: Int
  var contextSwitches: Int
}

func ourIdle(seconds duration: Double) throws -> IdleResult {
  try onFreshThread {
    let loop = EventRunLoop.current
    let counter = ActivityCounter()
    loop.addInstrument(counter)
    defer { loop.removeInstrument(counter) }
    let timer = try LoopTimer(fireAt: .now + .seconds(3600), name: "far") { _ in }
    try loop.add(timer, mode: .default)
    defer { timer.invalidate() }
    let tid = crl_current_tid()
    let switches = contextSwitches(thread: tid)
    try loop.run(mode: .default, timeout: .seconds(duration))
    // Reading /proc costs no switch of this thread; one is the sleep that ends at the timeout.
    let used = contextSwitches(thread: tid) - switches
    return IdleResult(
      extraPasses: counter.passes - 1, extraWakeUps: counter.wakeUps - 1,
      contextSwitches: used - 1)
  }
}

func cfIdle(seconds duration: Double) throws -> IdleResult {
  try onFreshThread {
    let loop = CFRunLoopGetCurrent()
    let counter = CFActivityCounter()
    CFRunLoopAddObserver(loop, counter.observer, cfDefaultMode)
    let timer = makeCFTimer(fireDate: CFAbsoluteTimeGetCurrent() + 3600, interval: 0)
    CFRunLoopAddTimer(loop, timer, cfDefaultMode)
    defer { CFRunLoopTimerInvalidate(timer) }
    let tid = crl_current_tid()
    let switches = contextSwitches(thread: tid)
    _ = CFRunLoopRunInMode(cfDefaultMode, duration, false)
    let used = contextSwitches(thread: tid) - switches
    return IdleResult(
      extraPasses: counter.count(.beforeTimers) - 1,
      extraWakeUps: counter.count(.afterWaiting) - 1, contextSwitches: used - 1)
  }
}

// MARK: tracing overhead

struct TracingResult {
  /// Median extra nanoseconds per activity with a tracer (JSON sink) and an observer.
  var tracedPerActivity: Double
  /// The same with the tracer and its JSON sink only.
  var tracerOnlyPerActivity: Double = 0
  /// The same with one observer only.
  var observerOnlyPerActivity: Double = 0
  /// Median extra nanoseconds per activity after tracing was turned off again.
  var offPerActivity: Double
  /// Median nanoseconds of an untraced pass.
  var passNanoseconds: Double
}

func ourTracing(batches: Int, passesPerBatch: Int) throws -> TracingResult {
  try onFreshThread {
    let loop = EventRunLoop.current
    try loop.add(CustomInputSource(name: "idle") {}, mode: .default)
    let path = "/tmp/runloop-bench-trace-\(getpid()).jsonl"
    defer { unlink(path) }
    let sink = try JSONLinesSink(path: path)
    let tracer = LoopTracer(sinks: [sink])
    let seen = Counter()
    let observer = LoopObserver(activities: .allActivities, name: "bench") { _, _ in seen.add() }
    func batch() throws -> Double {
      let start = nanosNow()
      for _ in 0..<passesPerBatch { try loop.run(mode: .default, timeout: .zero) }
      return Double(nanosNow() - start) / Double(passesPerBatch)
    }
    // A zero-timeout run reports entry, beforeTimers, beforeSources and exit.
    let activitiesPerPass = 4.0
    _ = try batch()
    var pristine: [Double] = []
    var both: [Double] = []
    var tracerOnly: [Double] = []
    var observerOnly: [Double] = []
    var off: [Double] = []
    for _ in 0..<batches {
      pristine.append(try batch())
      tracer.attach(to: loop)
      loop.add(observer, mode: .default)
      both.append(try batch())
      loop.remove(observer, mode: .default)
      tracerOnly.append(try batch())
      tracer.detach()
      // Let the writer thread finish the backlog before the untraced batches: on 2 cores it
      // would otherwise take CPU time from them (an "off" batch cost up to 12% more).
      sink.flush(timeout: .seconds(60))
      loop.add(observer, mode: .default)
      observerOnly.append(try batch())
      loop.remove(observer, mode: .default)
      off.append(try batch())
    }
    sink.flush()
    tracer.close()
    let base = median(pristine)
    func cost(_ samples: [Double]) -> Double { (median(samples) - base) / activitiesPerPass }
    return TracingResult(
      tracedPerActivity: cost(both), tracerOnlyPerActivity: cost(tracerOnly),
      observerOnlyPerActivity: cost(observerOnly), offPerActivity: cost(off),
      passNanoseconds: base)
  }
}

/// CF's cost per activity with one observer for all activities (no sink: CF has none).
func cfTracing(batches: Int, passesPerBatch: Int) throws -> TracingResult {
  try onFreshThread {
    let loop = CFRunLoopGetCurrent()
    CFRunLoopAddSource(loop, makeCFSource {}, cfDefaultMode)
    let counter = CFActivityCounter()
    func batch() -> Double {
      let start = nanosNow()
      for _ in 0..<passesPerBatch { _ = CFRunLoopRunInMode(cfDefaultMode, 0, false) }
      return Double(nanosNow() - start) / Double(passesPerBatch)
    }
    _ = batch()
    var pristine: [Double] = []
    var traced: [Double] = []
    var off: [Double] = []
    for _ in 0..<batches {
      pristine.append(batch())
      CFRunLoopAddObserver(loop, counter.observer, cfDefaultMode)
      traced.append(batch())
      CFRunLoopRemoveObserver(loop, counter.observer, cfDefaultMode)
      off.append(batch())
    }
    // CF reports entry, beforeTimers, beforeSources and exit for a zero-timeout run too.
    let base = median(pristine)
    return TracingResult(
      tracedPerActivity: (median(traced) - base) / 4, offPerActivity: (median(off) - base) / 4,
      passNanoseconds: base)
  }
}
