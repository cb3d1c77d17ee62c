import Dispatch
import Foundation
import Glibc
import RunLoopCore
import Synchronization

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
/// The loop thread's cost while attached: per notification a few stores of integers into the
/// loop's own state (where it is, the call-out it is in, whether it is awake), with no clock
/// reading and no lock; going to sleep after a wake-up adds one atomic exchange (figures in
/// the guide's Performance article). Attached nowhere, it costs nothing. The watchdog's own
/// thread wakes every quarter of the threshold (at least every millisecond, at most every
/// second) to look at the loops, and times their awake stretches with its own clock: a
/// stretch is reported once that thread has seen it last for the threshold, and its start
/// is the look before the first that saw it, so the time awake a report gives is never
/// shorter than the truth and longer by at most one period.
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
  /// Tells this watchdog's entries in ``WatchedLoopSlots`` apart from those of others.
  let serial = nextWatchdogSerial.wrappingAdd(1, ordering: .relaxed).newValue
  /// Counts the detaches: a loop's state registered before the last one is stale, and the
  /// loop registers again at its next notification.
  let epoch = Atomic<UInt64>(0)
  // Guarded by its own lock: the loops watched, by id, and the counts (and the epoch's
  // changes, so that a loop does not register into an epoch that just ended).
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
    state.withLock { state in
      state.loops.removeAll()
      epoch.wrappingAdd(1, ordering: .relaxed)
    }
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

  /// Notes whether the loop is awake, and where; a stalled loop that goes to sleep (or
  /// leaves its run) is reported recovered.
  ///
  /// ```swift
  /// watchdog.attach(to: loop)  // the loop calls this on its thread
  /// ```
  public func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    if let recovered = watched(loop).reach(activity, info) {
      report(recovery: recovered, of: loop, now: TraceClock.monotonicNow())
    }
  }

  /// Notes the call-out the loop enters.
  ///
  /// ```swift
  /// watchdog.attach(to: loop)  // the loop calls this on its thread
  /// ```
  public func runLoop(
    _ loop: EventRunLoop, willCallOut kind: CalloutKind, name: String, _ info: LoopPassInfo
  ) {
    watched(loop).enter(kind: kind.name, name: name, info)
  }

  /// Notes that the call-out returned.
  ///
  /// ```swift
  /// watchdog.attach(to: loop)  // the loop calls this on its thread
  /// ```
  public func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo)
  {
    watched(loop).leave()
  }

  /// The state of `loop` (on its thread): from the thread's slots, or registered under the
  /// lock the first time and after a detach.
  private func watched(_ loop: EventRunLoop) -> WatchedLoop {
    let epoch = epoch.load(ordering: .relaxed)
    let slots = WatchedLoopSlots.current
    if let known = slots.find(watchdog: serial, epoch: epoch, loop: loop.id) { return known }
    let watched = WatchedLoop(loop, registeredAt: TraceClock.monotonicNow())
    let registered = state.withLock { state -> Bool in
      guard self.epoch.load(ordering: .relaxed) == epoch else { return false }
      state.loops[loop.id] = watched
      return true
    }
    // Detached meanwhile: this notification's state is not watched, and the next one
    // registers again.
    if registered { slots.keep(watched, watchdog: serial, epoch: epoch) }
    return watched
  }

  /// On the watchdog's thread: reports each loop awake past the threshold, once per stall.
  private func look() {
    let now = TraceClock.monotonicNow()
    let stalls = state.withLock { state -> [WatchedLoop.Stall] in
      state.loops.values.compactMap { $0.look(now: now, threshold: thresholdNanoseconds) }
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

/// The source of ``StallWatchdog/serial``.
private let nextWatchdogSerial = Atomic<UInt64>(0)
