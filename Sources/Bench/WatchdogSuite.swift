import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTracing

/// What the stall watchdog costs a loop pass: off (never attached, and detached again) and
/// on, for a zero-timeout pass that runs one perform request (entry, beforeTimers, a block
/// call-out, beforeSources, exit).
struct WatchdogResult {
  /// Median nanoseconds of a pass with no instrument.
  var passNanoseconds: Double
  /// Median extra nanoseconds per pass with the watchdog attached.
  var onPerPass: Double
  /// Median extra nanoseconds per pass after it was detached.
  var offPerPass: Double
}

func ourWatchdog(batches: Int, passesPerBatch: Int) throws -> WatchdogResult {
  try onFreshThread {
    let loop = EventRunLoop.current
    try loop.add(CustomInputSource(name: "idle") {}, mode: .default)
    // A tracer with no sink: the watchdog needs one to report to, and nothing stalls here.
    let tracer = LoopTracer(sinks: [])
    let watchdog = StallWatchdog(threshold: .seconds(10), reportingTo: tracer)
    defer {
      watchdog.close()
      tracer.close()
    }
    func batch() throws -> Double {
      let start = nanosNow()
      for _ in 0..<passesPerBatch {
        loop.perform(name: "work") {}
        try loop.run(mode: .default, timeout: .zero)
      }
      return Double(nanosNow() - start) / Double(passesPerBatch)
    }
    _ = try batch()
    var pristine: [Double] = []
    var on: [Double] = []
    var off: [Double] = []
    for _ in 0..<batches {
      pristine.append(try batch())
      watchdog.attach(to: loop)
      on.append(try batch())
      watchdog.detach()
      off.append(try batch())
    }
    let base = median(pristine)
    return WatchdogResult(
      passNanoseconds: base, onPerPass: median(on) - base, offPerPass: median(off) - base)
  }
}

/// The "watchdog" suite: the cost of a stall watchdog per loop pass.
let watchdogSuite = Suite(name: "watchdog") { options, report in
  let batches = options.quick ? 10 : 40
  let passes = options.quick ? 500 : 1000
  let ours = try ourWatchdog(batches: batches, passesPerBatch: passes)
  report.add(
    ResultRow(
      suite: "stall watchdog", metric: "per pass with one call-out, watchdog on", unit: "ns",
      ours: ours.onPerPass, cf: nil, floor: nil, advantage: nil, target: "report", pass: nil,
      note: String(format: "untraced pass: %.0f ns", ours.passNanoseconds)))
  let offShare = ours.offPerPass / ours.passNanoseconds
  report.add(
    ResultRow(
      suite: "stall watchdog", metric: "per pass, watchdog detached again", unit: "ns",
      ours: ours.offPerPass, cf: nil, floor: nil, advantage: nil,
      target: "within 5% of a pass", pass: abs(offShare) <= 0.05,
      note: String(format: "off changes a pass by %.1f%%", offShare * 100)))
}
