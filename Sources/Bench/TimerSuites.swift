import CRunLoopLinux
import CoreFoundation
import Foundation
import Glibc
import Histogram
import RunLoopCore
import RunLoopTimers

// MARK: timer churn

/// Seconds to schedule `offsets.count` one-shot timers (fire dates `offsets` seconds ahead,
/// in random order) on this thread's loop and then cancel them all.
func ourTimerChurn(offsets: [Double]) throws -> Double {
  try onFreshThread {
    let loop = EventRunLoop.current
    var timers: [LoopTimer] = []
    timers.reserveCapacity(offsets.count)
    let start = nanosNow()
    let now = ContinuousClock.now
    for offset in offsets {
      let timer = try LoopTimer(fireAt: now + .seconds(offset), name: "churn") { _ in }
      try loop.add(timer, mode: .default)
      timers.append(timer)
    }
    for timer in timers { timer.invalidate() }
    return seconds(since: start)
  }
}

func cfTimerChurn(offsets: [Double]) throws -> Double {
  try onFreshThread {
    let loop = CFRunLoopGetCurrent()
    var timers: [CFRunLoopTimer] = []
    timers.reserveCapacity(offsets.count)
    let start = nanosNow()
    let now = CFAbsoluteTimeGetCurrent()
    for offset in offsets {
      let timer = makeCFTimer(fireDate: now + offset, interval: 0)
      CFRunLoopAddTimer(loop, timer, cfDefaultMode)
      timers.append(timer)
    }
    for timer in timers { CFRunLoopTimerInvalidate(timer) }
    return seconds(since: start)
  }
}

// MARK: timer lateness

/// Lateness of the ticks of a repeating timer, against the ideal grid first + k * interval.
/// A tick that comes after a later grid point was due is charged from the first one it
/// missed, so skipped ticks show up as lateness instead of disappearing.
final class LatenessRecorder: @unchecked Sendable {
  // Unchecked: written in the timer's call-outs on the loop thread, read after it stopped.
  var histogram = Histogram<UInt64>(
    highestTrackableValue: 10_000_000, numberOfSignificantValueDigits: .three)
  let first: UInt64
  let interval: UInt64
  var lastTick: Int64 = -1

  init(first: UInt64, interval: UInt64) {
    self.first = first
    self.interval = interval
  }

  func tick(at now: UInt64) {
    let due = first &+ UInt64(lastTick + 1) &* interval
    let late = now > due ? now - due : 0
    _ = histogram.record(min(late, 10_000_000))
    let reached = now >= first ? Int64((now - first) / interval) : 0
    lastTick = max(lastTick + 1, reached)
  }
}

struct Lateness {
  var p50: Double
  var p99: Double
  var ticks: UInt64
}

extension Lateness {
  /// Percentiles in microseconds of a histogram of nanoseconds.
  init(_ histogram: Histogram<UInt64>) {
    self.init(
      p50: Double(histogram.valueAtPercentile(50)) / 1000,
      p99: Double(histogram.valueAtPercentile(99)) / 1000, ticks: histogram.totalCount)
  }
}

func ourLateness(seconds duration: Double) throws -> Histogram<UInt64> {
  try onFreshThread {
    let loop = EventRunLoop.current
    let start = ContinuousClock.now + .milliseconds(1)
    let firstNanos = nanosNow() + 1_000_000
    let recorder = LatenessRecorder(first: firstNanos, interval: 1_000_000)
    let timer = try LoopTimer(fireAt: start, every: .milliseconds(1), name: "tick") { _ in
      recorder.tick(at: nanosNow())
    }
    try loop.add(timer, mode: .default)
    try loop.run(mode: .default, timeout: .seconds(duration))
    timer.invalidate()
    return recorder.histogram
  }
}

func cfLateness(seconds duration: Double) throws -> Histogram<UInt64> {
  try onFreshThread {
    let loop = CFRunLoopGetCurrent()
    let firstNanos = nanosNow() + 1_000_000
    let fireDate = CFAbsoluteTimeGetCurrent() + 0.001
    let recorder = LatenessRecorder(first: firstNanos, interval: 1_000_000)
    let timer = makeCFTimer(fireDate: fireDate, interval: 0.001) { recorder.tick(at: nanosNow()) }
    CFRunLoopAddTimer(loop, timer, cfDefaultMode)
    _ = CFRunLoopRunInMode(cfDefaultMode, duration, false)
    CFRunLoopTimerInvalidate(timer)
    return recorder.histogram
  }
}

/// The floor: a 1 ms timerfd (CLOCK_BOOTTIME, absolute grid) waited on through epoll.
func floorLateness(seconds duration: Double) throws -> Histogram<UInt64> {
  try onFreshThread {
    let timer = timerfd_create(CLOCK_BOOTTIME, Int32(TFD_CLOEXEC))
    let poll = epoll_create1(Int32(EPOLL_CLOEXEC))
    _ = crl_epoll_ctl(poll, EPOLL_CTL_ADD, timer, EPOLLIN.rawValue, 1)
    defer {
      close(timer)
      close(poll)
    }
    let first = nanosNow() + 1_000_000
    var spec = itimerspec()
    spec.it_value = timespec(
      tv_sec: Int(first / 1_000_000_000), tv_nsec: Int(first % 1_000_000_000))
    spec.it_interval = timespec(tv_sec: 0, tv_nsec: 1_000_000)
    timerfd_settime(timer, Int32(TFD_TIMER_ABSTIME), &spec, nil)
    let recorder = LatenessRecorder(first: first, interval: 1_000_000)
    let end = first + UInt64(duration * 1e9)
    var events = [epoll_event](repeating: epoll_event(), count: 4)
    while nanosNow() < end {
      guard epoll_wait(poll, &events, 4, -1) > 0 else { continue }
      let now = nanosNow()
      var expirations: UInt64 = 0
      _ = read(timer, &expirations, 8)
      recorder.tick(at: now)
    }
    return recorder.histogram
  }
}

// MARK: tolerance

struct ToleranceResult {
  var wakeUps: Int
  var fired: Int
}

func ourTolerance(offsets: [Double], tolerance: Double) throws -> ToleranceResult {
  try onFreshThread {
    let loop = EventRunLoop.current
    let counter = ActivityCounter()
    let fired = Counter()
    let now = ContinuousClock.now
    for offset in offsets {
      let timer = try LoopTimer(
        fireAt: now + .seconds(offset), tolerance: .seconds(tolerance), name: "t"
      ) { _ in fired.add() }
      try loop.add(timer, mode: .default)
    }
    loop.addInstrument(counter)
    defer { loop.removeInstrument(counter) }
    let last = (offsets.max() ?? 0) + tolerance + 0.2
    try loop.run(mode: .default, timeout: .seconds(last))
    return ToleranceResult(wakeUps: counter.wakeUps, fired: fired.value)
  }
}

func cfTolerance(offsets: [Double], tolerance: Double) throws -> ToleranceResult {
  try onFreshThread {
    let loop = CFRunLoopGetCurrent()
    let counter = CFActivityCounter()
    let fired = Counter()
    let now = CFAbsoluteTimeGetCurrent()
    for offset in offsets {
      let timer = makeCFTimer(fireDate: now + offset, interval: 0) { fired.add() }
      CFRunLoopTimerSetTolerance(timer, tolerance)
      CFRunLoopAddTimer(loop, timer, cfDefaultMode)
    }
    CFRunLoopAddObserver(loop, counter.observer, cfDefaultMode)
    let last = (offsets.max() ?? 0) + tolerance + 0.2
    _ = CFRunLoopRunInMode(cfDefaultMode, last, false)
    return ToleranceResult(wakeUps: counter.count(.afterWaiting), fired: fired.value)
  }
}

/// The fewest wake-ups that fire every timer within its window [date, date + tolerance]:
/// wake at the earliest window's end, fire all windows open by then, repeat (optimal for
/// intervals of equal length).
func minimumWakeUps(offsets: [Double], tolerance: Double) -> Int {
  var count = 0
  var covered = -Double.infinity
  for offset in offsets.sorted() where offset > covered {
    count += 1
    covered = offset + tolerance
  }
  return count
}

// MARK: memory

struct MemoryResult {
  var bytesPerTimer: Double
  var bytesPerSource: Double
  var allocationsPerFire: Double
  var allocationsPerIdlePass: Double
}

extension MemoryResult {
  /// Each figure's median over `runs`.
  init(medianOf runs: [MemoryResult]) {
    self.init(
      bytesPerTimer: median(runs.map(\.bytesPerTimer)),
      bytesPerSource: median(runs.map(\.bytesPerSource)),
      allocationsPerFire: median(runs.map(\.allocationsPerFire)),
      allocationsPerIdlePass: median(runs.map(\.allocationsPerIdlePass)))
  }
}

/// Allocations of the loop thread per timer fire, counted from the 50th fire on (the first
/// ones warm caches up). Touched on the loop thread only.
final class FireAllocations: @unchecked Sendable {
  // Unchecked: touched on the loop thread only, read after it stopped.
  private var count = 0
  private var first: UInt64 = 0
  private var last: UInt64 = 0

  /// Called in the timer's call-out.
  func fired() {
    count += 1
    if count == 50 { first = threadAllocations() }
    last = threadAllocations()
  }

  var allocationsPerFire: Double { Double(last - first) / Double(max(1, count - 50)) }
}

func ourMemory(count: Int, fireSeconds: Double) throws -> MemoryResult {
  try onFreshThread {
    let loop = EventRunLoop.current
    let now = ContinuousClock.now
    // Warm up: the loop's scheduler and tables exist before the measurement.
    let warm = try LoopTimer(fireAt: now + .seconds(7200), name: "warm") { _ in }
    try loop.add(warm, mode: .default)
    let warmSource = CustomInputSource(name: "warm") {}
    try loop.add(warmSource, mode: .default)

    var timers: [LoopTimer] = []
    timers.reserveCapacity(count)
    let before = heapBytesInUse()
    for index in 0..<count {
      let timer = try LoopTimer(fireAt: now + .seconds(3600 + Double(index)), name: "m") { _ in }
      try loop.add(timer, mode: .default)
      timers.append(timer)
    }
    let perTimer = Double(heapBytesInUse() - before) / Double(count)
    for timer in timers { timer.invalidate() }
    timers = []

    var sources: [CustomInputSource] = []
    sources.reserveCapacity(count)
    let beforeSources = heapBytesInUse()
    for _ in 0..<count {
      let source = CustomInputSource(name: "m") {}
      try loop.add(source, mode: .default)
      sources.append(source)
    }
    let perSource = Double(heapBytesInUse() - beforeSources) / Double(count)
    for source in sources { source.invalidate() }
    sources = []

    // Allocations per idle zero-timeout pass, to tell the pass's share from the timer's.
    for _ in 0..<100 { try loop.run(mode: .default, timeout: .zero) }
    let idleStart = threadAllocations()
    for _ in 0..<1000 { try loop.run(mode: .default, timeout: .zero) }
    let perIdlePass = Double(threadAllocations() - idleStart) / 1000

    let fires = FireAllocations()
    let timer = try LoopTimer(fireAt: .now, every: .microseconds(200), name: "fire") { _ in
      fires.fired()
    }
    try loop.add(timer, mode: .default)
    try loop.run(mode: .default, timeout: .seconds(fireSeconds))
    timer.invalidate()
    warm.invalidate()
    warmSource.invalidate()
    return MemoryResult(
      bytesPerTimer: perTimer, bytesPerSource: perSource,
      allocationsPerFire: fires.allocationsPerFire,
      allocationsPerIdlePass: perIdlePass)
  }
}

func cfMemory(count: Int, fireSeconds: Double) throws -> MemoryResult {
  try onFreshThread {
    let loop = CFRunLoopGetCurrent()
    let now = CFAbsoluteTimeGetCurrent()
    let warm = makeCFTimer(fireDate: now + 7200, interval: 0)
    CFRunLoopAddTimer(loop, warm, cfDefaultMode)
    let warmSource = makeCFSource {}
    CFRunLoopAddSource(loop, warmSource, cfDefaultMode)

    var timers: [CFRunLoopTimer] = []
    timers.reserveCapacity(count)
    let before = heapBytesInUse()
    for index in 0..<count {
      let timer = makeCFTimer(fireDate: now + 3600 + Double(index), interval: 0)
      CFRunLoopAddTimer(loop, timer, cfDefaultMode)
      timers.append(timer)
    }
    let perTimer = Double(heapBytesInUse() - before) / Double(count)
    for timer in timers { CFRunLoopTimerInvalidate(timer) }
    timers = []

    var sources: [CFRunLoopSource] = []
    sources.reserveCapacity(count)
    let beforeSources = heapBytesInUse()
    for _ in 0..<count {
      // A context without a callback box, so only CF's own bytes count.
      var context = CFRunLoopSourceContext()
      context.perform = { _ in }
      let source = CFRunLoopSourceCreate(nil, 0, &context)!
      CFRunLoopAddSource(loop, source, cfDefaultMode)
      sources.append(source)
    }
    let perSource = Double(heapBytesInUse() - beforeSources) / Double(count)
    for source in sources { CFRunLoopSourceInvalidate(source) }
    sources = []

    for _ in 0..<100 { _ = CFRunLoopRunInMode(cfDefaultMode, 0, false) }
    let idleStart = threadAllocations()
    for _ in 0..<1000 { _ = CFRunLoopRunInMode(cfDefaultMode, 0, false) }
    let perIdlePass = Double(threadAllocations() - idleStart) / 1000

    let fires = FireAllocations()
    let timer = makeCFTimer(fireDate: CFAbsoluteTimeGetCurrent(), interval: 0.0002) {
      fires.fired()
    }
    CFRunLoopAddTimer(loop, timer, cfDefaultMode)
    _ = CFRunLoopRunInMode(cfDefaultMode, fireSeconds, false)
    CFRunLoopTimerInvalidate(timer)
    CFRunLoopTimerInvalidate(warm)
    CFRunLoopSourceInvalidate(warmSource)
    return MemoryResult(
      bytesPerTimer: perTimer, bytesPerSource: perSource,
      allocationsPerFire: fires.allocationsPerFire,
      allocationsPerIdlePass: perIdlePass)
  }
}
