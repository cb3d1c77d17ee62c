import CBenchSupport
import CRunLoopLinux
import Foundation
import Histogram
import Synchronization

/// Every suite: its name, and what it runs, adding rows to the report.
struct Suite {
  let name: String
  let run: @Sendable (BenchOptions, Report) throws -> Void
}

/// Runs `ours`, `cf` and `floor` in turn `rounds` times (interleaved, so drifts in machine
/// load hit all three alike) and returns the median of each. Each round starts with the
/// next side (ours, CF, floor; then CF, floor, ours; ...), so no side always runs first,
/// or always right after the same other side: on a virtual machine, how the previous run
/// left the idle vCPUs changes how fast the next one's threads wake.
func interleaved(
  rounds: Int, ours: () throws -> Double, cf: () throws -> Double,
  floor: (() throws -> Double)? = nil
) throws -> (ours: Double, cf: Double, floor: Double?) {
  var a: [Double] = []
  var b: [Double] = []
  var c: [Double] = []
  // RUNLOOP_BENCH_ONLY=ours|cf|floor runs one side only: for profiling (perf, strace).
  let only = ProcessInfo.processInfo.environment["RUNLOOP_BENCH_ONLY"]
  let sides = floor == nil ? 2 : 3
  for round in 0..<rounds {
    for step in 0..<sides {
      switch (round + step) % sides {
      case 0: a.append(only == nil || only == "ours" ? try ours() : .nan)
      case 1: b.append(only == nil || only == "cf" ? try cf() : .nan)
      default:
        if let floor { c.append(only == nil || only == "floor" ? try floor() : .nan) }
      }
    }
  }
  return (median(a), median(b), floor == nil ? nil : median(c))
}

let allSuites: [Suite] = [
  Suite(name: "ping-pong") { options, report in
    let trips = options.quick ? 3000 : 20000
    let rounds = options.quick ? 1 : 3
    // Twice: with the threads free to run on any CPU, and with every thread of the three
    // sides on one CPU. On this kind of virtual machine a thread woken on an idle vCPU
    // waits some 25 to 35 us for the hypervisor to wake that vCPU from its halt (the guest
    // kernel's own halt polling is off), for every side that blocks, bare calls included.
    // Our loops poll before they sleep when they are being woken at short intervals (see
    // `EventRunLoop.spinLimit`), which hides that latency; the row shows the CPU time it
    // costs, and the rate with polling off beside it. On one CPU a hop is a local context
    // switch, our loops do not poll, and what is left to compare is what each side does
    // around the switch.
    // RUNLOOP_BENCH_PLACEMENT=any|one measures one row only: for profiling.
    let onlyPlacement = ProcessInfo.processInfo.environment["RUNLOOP_BENCH_PLACEMENT"]
    for (placement, cpu) in [("threads on any CPU", -1), ("threads on one CPU", 0)] {
      if let onlyPlacement, onlyPlacement != (cpu < 0 ? "any" : "one") { continue }
      if crl_run_on_cpu(Int32(cpu)) != 0 {
        print("ping-pong: cannot set CPU affinity (errno \(errno)); row skipped")
        continue
      }
      defer { _ = crl_run_on_cpu(-1) }
      let result = try interleaved(
        rounds: rounds, ours: { try ourPingPong(roundTrips: trips) },
        cf: { cfPingPong(roundTrips: trips) }, floor: { floorPingPong(roundTrips: trips) })
      let cpuPerTrip = [
        pingPongCPU.load(ordering: .relaxed), cfPingPongCPU.load(ordering: .relaxed),
        floorPingPongCPU.load(ordering: .relaxed),
      ].map { Double($0) / 1000 }
      let spins = pingPongSpins.load(ordering: .relaxed)
      let caught = pingPongSpinsCaught.load(ordering: .relaxed)
      let allocations = [
        pingPongAllocations.load(ordering: .relaxed),
        cfPingPongAllocations.load(ordering: .relaxed),
      ].map { Double($0) / Double(trips) }
      // Profiling one side other than ours (RUNLOOP_BENCH_ONLY) skips the rounds without
      // polling: they would be most of the samples.
      let only = ProcessInfo.processInfo.environment["RUNLOOP_BENCH_ONLY"]
      let withoutPolling =
        only == nil || only == "ours"
        ? median(
          try (0..<rounds).map { _ in try ourPingPong(roundTrips: trips, spinLimit: .zero) })
        : .nan
      let vsCF = result.ours / result.cf
      let vsFloor = result.ours / result.floor!
      report.add(
        ResultRow(
          suite: "ping-pong", metric: "round trips, \(placement)", unit: "/s", ours: result.ours,
          cf: result.cf, floor: result.floor, advantage: vsCF,
          target: ">= 1.2x CF, >= 0.8x floor", pass: vsCF >= 1.2 && vsFloor >= 0.8,
          note: String(
            format:
              "ours/floor = %.2f; CPU time per round trip (all threads): ours %.1f us, CF %.1f us, "
              + "floor %.1f us; sleeps that polled first: %llu of %llu hops, %llu of them caught "
              + "work; with polling off (spinLimit = .zero): %.0f/s, %.2fx CF, %.2f of floor; "
              + "allocations per round trip: ours %.1f, CF %.1f",
            vsFloor, cpuPerTrip[0], cpuPerTrip[1], cpuPerTrip[2], spins, UInt64(2 * trips),
            caught, withoutPolling, withoutPolling / result.cf, withoutPolling / result.floor!,
            allocations[0], allocations[1])))
    }
  },
  Suite(name: "signal-pummel") { options, report in
    let duration = options.quick ? 0.3 : 1.0
    var ours: [PummelResult] = []
    var cf: [PummelResult] = []
    for _ in 0..<(options.quick ? 1 : 3) {
      ours.append(try ourPummel(seconds: duration))
      cf.append(cfPummel(seconds: duration))
    }
    for (metric, key) in [
      ("signals", \PummelResult.signalsPerSecond), ("call-outs", \.calloutsPerSecond),
    ] {
      let a = median(ours.map { $0[keyPath: key] })
      let b = median(cf.map { $0[keyPath: key] })
      report.add(
        ResultRow(
          suite: "signal pummel", metric: metric, unit: "/s", ours: a, cf: b, floor: nil,
          advantage: a / b, target: ">= 2x CF", pass: a / b >= 2))
    }
  },
  Suite(name: "empty-passes") { options, report in
    let passes = options.quick ? 50_000 : 300_000
    let result = try interleaved(
      rounds: options.quick ? 1 : 3, ours: { try ourEmptyPasses(passes) },
      cf: { try cfEmptyPasses(passes) }, floor: { floorEmptyPasses(passes) })
    report.add(
      ResultRow(
        suite: "empty passes", metric: "zero-timeout runs", unit: "/s", ours: result.ours,
        cf: result.cf, floor: result.floor, advantage: result.ours / result.cf,
        target: ">= 1.5x CF", pass: result.ours / result.cf >= 1.5))
  },
  Suite(name: "timer-churn") { options, report in
    let counts =
      options.quick ? [1000, 3000, 10_000, 30_000] : [1000, 3000, 10_000, 30_000, 100_000]
    var ourTimes: [Int: Double] = [:]
    for count in counts {
      var generator = SystemRandomNumberGenerator()
      let offsets = (0..<count).map { _ in Double.random(in: 1...100, using: &generator) }
      let rounds = count >= 100_000 ? 1 : (options.quick ? 1 : 3)
      let result = try interleaved(
        rounds: rounds, ours: { try ourTimerChurn(offsets: offsets) },
        cf: { try cfTimerChurn(offsets: offsets) })
      ourTimes[count] = result.ours
      let isLargest = count == counts.last
      report.add(
        ResultRow(
          suite: "timer churn", metric: "\(count) schedule+cancel", unit: "ms",
          ours: result.ours * 1000, cf: result.cf * 1000, floor: nil,
          advantage: result.cf / result.ours,
          target: isLargest && count == 100_000 ? ">= 50x CF" : "report",
          pass: isLargest && count == 100_000 ? result.cf / result.ours >= 50 : nil))
    }
    if let small = ourTimes[10_000], let largest = counts.last, let large = ourTimes[largest] {
      let n1 = 10_000.0
      let n2 = Double(largest)
      let expected = (n2 * log2(n2)) / (n1 * log2(n1))
      let growth = large / small
      report.add(
        ResultRow(
          suite: "timer churn", metric: "growth 10000->\(largest) (ours)", unit: "x",
          ours: growth, cf: nil, floor: expected, advantage: nil,
          target: "O(n log n): <= 2x the n log n ratio", pass: growth <= 2 * expected,
          note: String(format: "n log n predicts %.1fx; linear would be %.0fx", expected, n2 / n1)))
    }
  },
  Suite(name: "timer-lateness") { options, report in
    // Twenty interleaved rounds of a twentieth of the time each, histograms merged, the side
    // that goes first rotating from round to round: a change in machine load then hits all
    // three alike, and no side always runs right after another one's threads.
    let duration = options.quick ? 0.5 : 2.0
    let rounds = 20
    var histograms = [Histogram<UInt64>](
      repeating: Histogram(
        highestTrackableValue: 10_000_000, numberOfSignificantValueDigits: .three),
      count: 3)
    for round in 0..<rounds {
      for step in 0..<3 {
        switch (round + step) % 3 {
        case 0: histograms[0].add(try ourLateness(seconds: duration / Double(rounds)))
        case 1: histograms[1].add(try cfLateness(seconds: duration / Double(rounds)))
        default: histograms[2].add(try floorLateness(seconds: duration / Double(rounds)))
        }
      }
    }
    let (ours, cf, floor) = (
      Lateness(histograms[0]), Lateness(histograms[1]), Lateness(histograms[2])
    )
    report.add(
      ResultRow(
        suite: "timer lateness", metric: "p50 (1 ms repeating)", unit: "us", ours: ours.p50,
        cf: cf.p50, floor: floor.p50, advantage: cf.p50 / ours.p50,
        target: "<= CF, <= 1.5x floor", pass: ours.p50 <= cf.p50 && ours.p50 <= 1.5 * floor.p50,
        note: "ticks: ours \(ours.ticks), CF \(cf.ticks), floor \(floor.ticks)"))
    report.add(
      ResultRow(
        suite: "timer lateness", metric: "p99 (1 ms repeating)", unit: "us", ours: ours.p99,
        cf: cf.p99, floor: floor.p99, advantage: cf.p99 / ours.p99, target: "<= CF",
        pass: ours.p99 <= cf.p99))
  },
  Suite(name: "tolerance") { options, report in
    var generator = SystemRandomNumberGenerator()
    let offsets = (0..<1000).map { _ in Double.random(in: 0.01...1.0, using: &generator) }
    let ours = try ourTolerance(offsets: offsets, tolerance: 0.05)
    let cf = try cfTolerance(offsets: offsets, tolerance: 0.05)
    let floor = minimumWakeUps(offsets: offsets, tolerance: 0.05)
    let advantage = Double(cf.wakeUps) / Double(max(1, ours.wakeUps))
    report.add(
      ResultRow(
        suite: "tolerance", metric: "wake-ups, 1000 timers/1 s, 50 ms", unit: "count",
        ours: Double(ours.wakeUps), cf: Double(cf.wakeUps), floor: Double(floor),
        advantage: advantage, target: "<= 1/5 of CF", pass: advantage >= 5,
        note: "fired: ours \(ours.fired), CF \(cf.fired); floor = fewest wake-ups possible"))
  },
  Suite(name: "idle") { options, report in
    let duration = options.quick ? 0.25 : 1.0
    let ours = try ourIdle(seconds: duration)
    let cf = try cfIdle(seconds: duration)
    report.add(
      ResultRow(
        suite: "idle", metric: "extra passes (far timer, \(duration) s)", unit: "count",
        ours: Double(ours.extraPasses), cf: Double(cf.extraPasses), floor: 0, advantage: nil,
        target: "0", pass: ours.extraPasses == 0))
    report.add(
      ResultRow(
        suite: "idle", metric: "extra wake-ups", unit: "count", ours: Double(ours.extraWakeUps),
        cf: Double(cf.extraWakeUps), floor: 0, advantage: nil, target: "0",
        pass: ours.extraWakeUps == 0,
        note: "context switches of the loop thread besides the final one: ours "
          + "\(ours.contextSwitches), CF \(cf.contextSwitches)"))
  },
  Suite(name: "tracing") { options, report in
    let batches = options.quick ? 10 : 60
    let passes = options.quick ? 500 : 1000
    let ours = try ourTracing(batches: batches, passesPerBatch: passes)
    let cf = try cfTracing(batches: batches, passesPerBatch: passes)
    report.add(
      ResultRow(
        suite: "tracing overhead", metric: "per activity, tracer+JSON sink+observer", unit: "ns",
        ours: ours.tracedPerActivity, cf: cf.tracedPerActivity, floor: nil, advantage: nil,
        target: "<= 1000 ns (median)", pass: ours.tracedPerActivity <= 1000,
        note: "CF column: one CF observer, no sink (CF has no tracer)"))
    report.add(
      ResultRow(
        suite: "tracing overhead", metric: "per activity, tracer+JSON sink only", unit: "ns",
        ours: ours.tracerOnlyPerActivity, cf: nil, floor: nil, advantage: nil,
        target: "report", pass: nil))
    report.add(
      ResultRow(
        suite: "tracing overhead", metric: "per activity, one observer only", unit: "ns",
        ours: ours.observerOnlyPerActivity, cf: cf.tracedPerActivity, floor: nil,
        advantage: cf.tracedPerActivity / ours.observerOnlyPerActivity, target: "report",
        pass: nil))
    let offShare = ours.offPerActivity * 4 / ours.passNanoseconds
    report.add(
      ResultRow(
        suite: "tracing overhead", metric: "per activity, tracing off again", unit: "ns",
        ours: ours.offPerActivity, cf: cf.offPerActivity, floor: nil, advantage: nil,
        target: "within 5% of a pass", pass: abs(offShare) <= 0.05,
        note: String(
          format: "untraced pass: ours %.0f ns, CF %.0f ns; off changes ours by %.1f%%",
          ours.passNanoseconds, cf.passNanoseconds, offShare * 100)))
  },
  Suite(name: "memory") { options, report in
    let count = options.quick ? 2000 : 10_000
    let fire = options.quick ? 0.1 : 0.3
    // Three times each, interleaved, and the median of each figure: heap bytes come from
    // mallinfo2, which counts every thread, so what another thread allocates or frees during
    // one measurement (a previous suite's writer thread winding down) moves that one only.
    var ourRuns: [MemoryResult] = []
    var cfRuns: [MemoryResult] = []
    for _ in 0..<(options.quick ? 1 : 3) {
      ourRuns.append(try ourMemory(count: count, fireSeconds: fire))
      cfRuns.append(try cfMemory(count: count, fireSeconds: fire))
    }
    let ours = MemoryResult(medianOf: ourRuns)
    let cf = MemoryResult(medianOf: cfRuns)
    report.add(
      ResultRow(
        suite: "memory", metric: "bytes per scheduled timer", unit: "B", ours: ours.bytesPerTimer,
        cf: cf.bytesPerTimer, floor: nil, advantage: cf.bytesPerTimer / ours.bytesPerTimer,
        target: "<= 128 B", pass: ours.bytesPerTimer <= 128))
    report.add(
      ResultRow(
        suite: "memory", metric: "bytes per custom source", unit: "B", ours: ours.bytesPerSource,
        cf: cf.bytesPerSource, floor: nil, advantage: cf.bytesPerSource / ours.bytesPerSource,
        target: "report", pass: nil))
    report.add(
      ResultRow(
        suite: "memory", metric: "allocations per repeating fire", unit: "count",
        ours: ours.allocationsPerFire, cf: cf.allocationsPerFire, floor: 0, advantage: nil,
        target: "0", pass: ours.allocationsPerFire < 0.01,
        note: String(
          format:
            "whole loop pass per fire; an idle zero-timeout pass allocates ours %.2f, CF %.2f",
          ours.allocationsPerIdlePass, cf.allocationsPerIdlePass)))
  },
  Suite(name: "threads") { options, report in
    // One thread of each kind in turn, median of each: a loaded machine delays some
    // thread starts by milliseconds, and a mean would be mostly those.
    let count = options.quick ? 30 : 300
    var ours: [Double] = []
    var cf: [Double] = []
    var floor: [Double] = []
    for index in 0..<count {
      ours.append(try ourThreadOnce(index))
      cf.append(cfThreadOnce(index))
      floor.append(floorThreadOnce())
    }
    let result = (ours: median(ours), cf: median(cf), floor: median(floor))
    report.add(
      ResultRow(
        suite: "thread costs", metric: "create+start+join a loop thread (median)", unit: "us",
        ours: result.ours, cf: result.cf, floor: result.floor, advantage: result.cf / result.ours,
        target: "report (macOS guide: ~90 us)", pass: nil,
        note: "CF column: Foundation Thread + CFRunLoopGetCurrent, until its body ends; floor: "
          + "pthread_create+join of an empty body"))
    let parked = options.quick ? 10 : 40
    let oursMemory = try threadMemoryInChild("ours", count: parked)
    let cfMemory = try threadMemoryInChild("cf", count: parked)
    report.add(
      ResultRow(
        suite: "thread costs", metric: "virtual memory per parked loop thread", unit: "KiB",
        ours: oursMemory.virtualKB, cf: cfMemory.virtualKB, floor: nil, advantage: nil,
        target: "report (macOS guide: 512 KiB stack)", pass: nil))
    report.add(
      ResultRow(
        suite: "thread costs", metric: "resident memory per parked loop thread", unit: "KiB",
        ours: oursMemory.residentKB, cf: cfMemory.residentKB, floor: nil, advantage: nil,
        target: "report (macOS guide: ~1 KiB kernel)", pass: nil))
    report.add(
      ResultRow(
        suite: "thread costs", metric: "heap per parked loop thread", unit: "B",
        ours: oursMemory.heapBytes, cf: cfMemory.heapBytes, floor: nil, advantage: nil,
        target: "report",
        pass: nil,
        note: String(
          format: "descriptors per loop thread: ours %.1f, CF %.1f", oursMemory.descriptors,
          cfMemory.descriptors)))
  },
  Suite(name: "ports") { options, report in
    // Foundation's SocketPort delivers on Linux only with one message in flight and a
    // component of 12 bytes or more (FoundationSocketPort.swift has the two defects), so the
    // target is judged that way: each sender waits for the handler before the next message.
    // SocketPort runs in a child process, where a trap cannot end the bench.
    let rounds = options.quick ? 1 : 3
    let oneAtATime = options.quick ? 1000 : 5000
    var ours: [Double] = []
    var socket: [Double] = []
    var socketFloor: [Double] = []
    var socketPort: [Double] = []
    var socketPortFailure: String?
    for _ in 0..<rounds {
      ours.append(try ourPortMessagesOneInFlight(oneAtATime))
      socket.append(try ourSocketMessagesOneInFlight(oneAtATime))
      socketFloor.append(try floorSocketMessagesOneInFlight(oneAtATime))
      let outcome = socketPortInChild(mode: "one-in-flight", count: oneAtATime)
      if let rate = outcome.rate {
        socketPort.append(rate)
      } else {
        socketPortFailure = outcome.summary
      }
    }
    let socketPortRate = socketPortFailure == nil ? median(socketPort) : nil
    let burst = socketPortInChild(mode: "burst", count: 20)
    let oneRead = socketPortInChild(mode: "one-read", count: 2)
    let bare = socketPortInChild(mode: "no-components", count: 1)
    let unix = socketPortInChild(mode: "unix", count: 1)
    let socketPortNote =
      "CF column: Foundation SocketPort over loopback TCP, \(socketPortPayload)-byte data "
      + "component, child process" + (socketPortFailure.map { "; SocketPort failed: \($0)" } ?? "")
    let inProcessRatio = socketPortRate.map { median(ours) / $0 }
    report.add(
      ResultRow(
        suite: "ports", metric: "in-process messages, one in flight", unit: "/s",
        ours: median(ours), cf: socketPortRate, floor: nil, advantage: inProcessRatio,
        target: ">= 2x SocketPort", pass: inProcessRatio.map { $0 >= 2 },
        note: "ours: InProcessPort; " + socketPortNote))
    // The same transport as SocketPort, for scale: the target is the in-process row's, and
    // loopback TCP itself (the floor) may be under 2x SocketPort, so this row only reports.
    let (tcp, tcpFloor) = (median(socket), median(socketFloor))
    report.add(
      ResultRow(
        suite: "ports", metric: "loopback TCP messages, one in flight", unit: "/s", ours: tcp,
        cf: socketPortRate, floor: tcpFloor, advantage: socketPortRate.map { tcp / $0 },
        target: "report", pass: nil,
        note: String(
          format: "ours: SocketSource, %.2f of the floor (a bare thread blocked in read); "
            + "floor/SocketPort = %.2f; ", tcp / tcpFloor, tcpFloor / (socketPortRate ?? .nan))
          + socketPortNote))
    let pipelined = try ourPortMessages(options.quick ? 20_000 : 200_000)
    report.add(
      ResultRow(
        suite: "ports", metric: "in-process messages, pipelined", unit: "/s", ours: pipelined,
        cf: nil, floor: nil, advantage: nil, target: "report", pass: nil,
        note: "SocketPort on Linux, each in a child process: 20 messages sent back to back: "
          + "\(burst.summary); 2 messages arriving in one read: \(oneRead.summary); "
          + "1 message without components: \(bare.summary); over a Unix socket: "
          + "\(unix.summary)"))
    let (named, raw) = try crossProcessRoundTrips(
      rounds: options.quick ? 3 : 9, seconds: options.quick ? 0.1 : 0.2)
    report.add(
      ResultRow(
        suite: "ports", metric: "cross-process request/reply", unit: "/s", ours: named, cf: nil,
        floor: raw, advantage: nil, target: ">= 0.7x raw Unix socket", pass: named / raw >= 0.7,
        note: String(format: "ours/raw = %.2f", named / raw)))
  },
  watchdogSuite,
  sourceScaleSuite,
]
