import Dispatch
import Foundation
import Glibc
import RunLoopCore

/// Reports a loop that stays awake past a threshold without going back to sleep: the
/// run-loop hang detector. Off unless attached; one switch for a loop (``attach(to:)``) or
/// for every loop of the process (``attachToAllLoops()``).
///
/// When a watched loop has been awake (since it woke, or since its run began) for
/// ``threshold`` without reaching `beforeWaiting` or leaving its run, the watchdog sends a
/// ``StallReport`` to its ``StallReporter`` (a `LoopTracer` writes it as a `stall` record): the loop, thread, mode, nesting depth, the
/// call-out the loop is in (kind and name, the innermost when call-outs nest) and how long it
/// has been awake, plus the thread's scheduling state and kernel wait channel as `/proc`
/// shows them (`R` running on the CPU, or `S` asleep in `futex_wait_queue` for a lock...).
/// When the loop goes back to sleep (or leaves its run), a `recovery` record follows with the
/// total time awake. A tracer sends both to every sink: the JSON log, and journald at
/// warning (stall) and notice (recovery) priority with their own `MESSAGE_ID`s.
///
/// It reports no backtrace of the stalled thread: taking one means interrupting that thread
/// with a signal and unwinding its stack inside the signal handler, and neither glibc's
/// `backtrace()` nor Swift's runtime is async-signal-safe; a thread stalled while holding
/// the allocator's or the runtime's lock would then deadlock the whole process. The kernel's
/// view (state and wait channel) is read from outside the thread instead, and a debugger
/// attached from outside (`gdb -p PID -batch -ex 'thread apply all bt'`) gives the stack.
///
/// The loop thread's cost while attached: per notification a clock reading and one short
/// lock (shared with the watchdog's thread and the other watched loops); at most about 1.5 µs
/// per pass with one call-out (runloop-bench, suite `watchdog`). Attached nowhere, it costs nothing.
/// The watchdog's own thread wakes every quarter of the threshold (at least every
/// millisecond, at most every second) to look at the loops.
///
/// ```swift
/// let tracer = LoopTracer(sinks: [try JSONLinesSink(path: "/tmp/svc.jsonl")])
/// let watchdog = StallWatchdog(threshold: .milliseconds(200), reportingTo: tracer)
/// watchdog.attachToAllLoops()
/// // ...
/// watchdog.close()
/// ```
public final class StallWatchdog: RunLoopInstrument, Sendable {
  /// How long a loop may stay awake before it is reported.
  public let threshold: Duration
  /// Where the reports go (a `LoopTracer`, whose run id and numbering they then carry).
  public let reporter: any StallReporter
  /// Activities (wake-ups and sleeps), and call-outs as they start and end.
  public var interests: InstrumentInterests { [.activities, .callouts, .calloutStarts] }

  private let thresholdNanoseconds: Int64
  // Guarded by its own lock: the loops watched, by id, and the counts.
  private let state = GuardedState(State())
  // Where the watchdog is attached, and whether it was closed.
  private let attachments = Attachments()
  private let wake = DispatchSemaphore(value: 0)
  private let finished = DispatchSemaphore(value: 0)

  private struct State {
    var loops: [UInt64: WatchedLoop] = [:]
    var stalls: UInt64 = 0
    var recoveries: UInt64 = 0
  }

  /// Creates the watchdog and starts its thread; it watches nothing until attached.
  ///
  /// - Parameters:
  ///   - threshold: how long a loop may stay awake without sleeping.
  ///   - reporter: where the reports go, usually a `LoopTracer`.
  ///
  /// ```swift
  /// let watchdog = StallWatchdog(threshold: .milliseconds(100), reportingTo: tracer)
  /// ```
  public init(threshold: Duration, reportingTo reporter: any StallReporter) {
    self.threshold = threshold
    self.reporter = reporter
    thresholdNanoseconds = max(1, TraceClock.nanoseconds(threshold))
    let period = min(max(thresholdNanoseconds / 4, 1_000_000), 1_000_000_000)
    let thread = Thread { [weak self, wake, finished] in
      while let watchdog = self, !watchdog.isClosed {
        watchdog.look()
        _ = wake.wait(timeout: .now() + .nanoseconds(Int(period)))
      }
      finished.signal()
    }
    thread.name = "stall-watchdog"
    thread.start()
  }

  /// Watches `loop`. Safe from any thread.
  ///
  /// ```swift
  /// watchdog.attach(to: worker.runLoop)
  /// ```
  public func attach(to loop: EventRunLoop) {
    attachments.attach(self, to: loop)
  }

  /// Watches every loop of the process, present and future.
  ///
  /// ```swift
  /// watchdog.attachToAllLoops()
  /// ```
  public func attachToAllLoops() {
    attachments.attachToAllLoops(self)
  }

  /// Stops watching every loop; the thread stays for a later attach.
  ///
  /// ```swift
  /// watchdog.detach()
  /// ```
  public func detach() {
    attachments.detach(self)
    state.withLock { $0.loops.removeAll() }
  }

  /// Detaches and ends the watchdog's thread (the reporter stays open).
  ///
  /// ```swift
  /// watchdog.close()
  /// ```
  public func close() {
    guard attachments.close() else { return }
    detach()
    wake.signal()
    _ = finished.wait(timeout: .now() + .seconds(5))
  }

  deinit {
    _ = attachments.close()
    wake.signal()
  }

  /// Stalls reported so far, and recoveries.
  ///
  /// ```swift
  /// let (stalls, recoveries) = watchdog.reports
  /// ```
  public var reports: (stalls: UInt64, recoveries: UInt64) {
    state.withLock { ($0.stalls, $0.recoveries) }
  }

  private var isClosed: Bool { attachments.isClosed }

  /// Forgets an exited thread's loop.
  ///
  /// ```swift
  /// // the loop calls this on its thread as the thread exits
  /// ```
  public func runLoopThreadDidExit(_ loop: EventRunLoop) {
    state.withLock { $0.loops[loop.id] = nil }
    attachments.forget(loop)
  }

  /// Notes when the loop woke and when it goes to sleep; a stalled loop that goes to sleep
  /// (or leaves its run) is reported recovered.
  ///
  /// ```swift
  /// watchdog.attach(to: loop)  // the loop calls this on its thread
  /// ```
  public func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    let now = TraceClock.monotonicNow()
    let recovered = withWatchedLoop(loop) { $0.reach(activity, info, now: now) }
    if let recovered { report(recovery: recovered, of: loop, now: now) }
  }

  /// Notes the call-out the loop enters.
  ///
  /// ```swift
  /// watchdog.attach(to: loop)  // the loop calls this on its thread
  /// ```
  public func runLoop(
    _ loop: EventRunLoop, willCallOut kind: CalloutKind, name: String, _ info: LoopPassInfo
  ) {
    let now = TraceClock.monotonicNow()
    withWatchedLoop(loop) { $0.enter(kind: kind.name, name: name, info, now: now) }
  }

  /// Notes that the call-out returned.
  ///
  /// ```swift
  /// watchdog.attach(to: loop)  // the loop calls this on its thread
  /// ```
  public func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo)
  {
    withWatchedLoop(loop) { $0.leave() }
  }

  /// Finds (or starts watching) `loop` and updates it, under the one lock.
  private func withWatchedLoop<Result>(
    _ loop: EventRunLoop, _ body: (inout WatchedLoop) -> Result
  ) -> Result {
    state.withLock { state in
      body(&state.loops[loop.id, default: WatchedLoop(loop: loop.id, tid: loop.threadID)])
    }
  }

  /// On the watchdog's thread: reports each loop awake past the threshold, once per stall.
  private func look() {
    let now = TraceClock.monotonicNow()
    let stalls = state.withLock { state -> [WatchedLoop.Stall] in
      var stalls: [WatchedLoop.Stall] = []
      var index = state.loops.values.startIndex
      while index != state.loops.values.endIndex {
        if let stall = state.loops.values[index].stall(now: now, threshold: thresholdNanoseconds) {
          stalls.append(stall)
        }
        state.loops.values.formIndex(after: &index)
      }
      return stalls
    }
    for stall in stalls {
      let tid = stall.tid
      // The kernel's view of the thread, read from outside it.
      let stat = _readFirstLine("/proc/self/task/\(tid)/stat") ?? ""
      let threadState = stat.split(separator: ")").last?.split(separator: " ").first.map(
        String.init)
      let wchan = _readFirstLine("/proc/self/task/\(tid)/wchan")
      let sent = reporter.report(
        StallReport(
          kind: .stall, loop: stall.loop, tid: tid, mode: stall.mode, iteration: stall.iteration,
          depth: stall.depth, awakeSince: stall.awakeSince, awakeFor: now - stall.awakeSince,
          calloutKind: stall.calloutKind, calloutName: stall.calloutName,
          threadState: threadState, wchan: wchan))
      if sent { state.withLock { $0.stalls += 1 } }
    }
  }

  private func report(recovery: WatchedLoop.Recovery, of loop: EventRunLoop, now: Int64) {
    let sent = reporter.report(
      StallReport(
        kind: .recovery, loop: loop.id, tid: loop.threadID, mode: recovery.mode,
        iteration: recovery.iteration, depth: recovery.depth, awakeSince: recovery.awakeSince,
        awakeFor: now - recovery.awakeSince))
    if sent { state.withLock { $0.recoveries += 1 } }
  }
}
