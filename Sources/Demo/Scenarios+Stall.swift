import Glibc
import RunLoopCore
import RunLoopObservers
import RunLoopTimers
import RunLoopTracing

extension Scenarios {
  /// A trace sink that narrates the watchdog's records and keeps them.
  final class StallNarrator: TraceSink, Sendable {
    let narration: Narration
    private let kept = GuardedState<[TraceRecord]>([])

    init(_ narration: Narration) {
      self.narration = narration
    }

    func enqueue(_ record: TraceRecord) {
      switch record.record {
      case .stall:
        narration.event(
          "watchdog: loop \(record.loop) STALLED, awake \(ms(record.duration)) in "
            + "\(record.calloutKind ?? "?") '\(record.calloutName ?? "")' (mode "
            + "'\(record.mode)', depth \(record.depth), thread \(record.thread) state "
            + "\(record.threadState ?? "?"), waiting in \(record.wchan ?? "?"))")
      case .recovery:
        narration.event("watchdog: loop \(record.loop) recovered after \(ms(record.duration))")
      default:
        return
      }
      kept.withLock { $0.append(record) }
    }

    func close() {}

    var records: [TraceRecord] { kept.withLock { $0 } }

    private func ms(_ nanoseconds: Int64?) -> String {
      milliseconds(.nanoseconds(nanoseconds ?? 0))
    }
  }

  static let stall = Scenario(
    name: "stall", title: "A stall watchdog reports a loop stuck in a call-out, then its recovery",
    guide: "Run Loops > When Would You Use a Run Loop? (a loop must get back to its sources)",
    article: "TracingARunLoop.md, Stalls"
  ) { narration in
    let loop = EventRunLoop.current
    let narrator = StallNarrator(narration)
    let tracer = LoopTracer(sinks: [narrator], runID: "stall-scenario")
    let watchdog = StallWatchdog(threshold: .milliseconds(100), reportingTo: tracer)
    defer {
      watchdog.close()
      tracer.close()
    }
    tracer.attach(to: loop)
    watchdog.attach(to: loop)
    let ticks = GuardedState(0)
    let tick = try LoopTimer(
      fireAt: .now + .milliseconds(40), every: .milliseconds(40), name: "tick"
    ) { _ in ticks.withLock { $0 += 1 } }
    try loop.add(tick, mode: .default)
    defer { tick.invalidate() }
    narration.say("A watchdog with a 100 ms threshold watches this loop; a timer ticks every")
    narration.say("40 ms. After 200 ms a perform request 'slow-report' blocks for 300 ms (as a")
    narration.say("call-out reading a slow disk would): the loop cannot get back to its sources.")
    let stuck = ContinuousClock.now + .milliseconds(200)
    try loop.add(
      LoopTimer(fireAt: stuck, name: "schedule-slow-report") { _ in
        loop.perform(name: "slow-report") {
          narration.event("'slow-report' starts blocking")
          usleep(300_000)
          narration.event("'slow-report' returns")
        }
      }, mode: .default)
    _ = try loop.run(mode: .default, timeout: .milliseconds(700))
    let records = narrator.records
    let stalls = records.filter { $0.record == .stall }
    let recoveries = records.filter { $0.record == .recovery }
    narration.expect(
      stalls.count == 1 && stalls[0].calloutName == "slow-report",
      "one stall was reported, naming the call-out 'slow-report' the loop was stuck in")
    narration.expect(
      stalls.first?.threadState == "S",
      "the kernel showed the thread asleep in a system call (state S), not spinning")
    narration.expect(
      recoveries.count == 1 && (recoveries[0].duration ?? 0) >= 300_000_000,
      "the recovery followed when the loop slept again, awake at least 300 ms in all")
    narration.expect(
      ticks.withLock { $0 } >= 4, "the quick timer ticks before and after were never stalls")
  }
}
