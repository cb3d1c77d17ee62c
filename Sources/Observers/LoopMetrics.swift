import CoreMetrics
import Histogram
import RunLoopCore

/// Per-loop measurements: iterations, time asleep and busy, utilization (busy over busy plus
/// asleep), call-out counts and time, timer lateness, custom-source signal-to-perform latency,
/// the delay of every kind of call-out that has a due time (p50, p99, max) and the perform
/// queue's depth, as a snapshot API and, optionally, through swift-metrics
/// (`runloop.utilization`, a gauge set at each sleep; `runloop.callout.delay`, a timer with
/// dimensions `loop` and `kind`).
///
/// Attach it like a tracer. Latencies go into HdrHistogram (`hdrhistogram-swift`) rather than
/// a hand-written histogram: constant memory, 3 significant digits at any scale.
///
/// ```swift
/// let metrics = LoopMetrics(exportingTo: MetricsSystem.factory)
/// metrics.attach(to: worker.runLoop)
/// // ...
/// let snapshot = metrics.snapshot(of: worker.runLoop)!
/// print(snapshot.timerLateness.p99)
/// ```
///
/// Signal-to-perform latency needs the signal instant, which the loop records only while an
/// instrument wants call-outs, as this one does.
public final class LoopMetrics: RunLoopInstrument, Sendable {
  /// The metrics wants activities, call-outs and sleeps.
  public var interests: InstrumentInterests { .all }
  /// The label prefix of exported metrics (`runloop` gives `runloop.iterations`, ...).
  public let labelPrefix: String

  private let factory: (any MetricsFactory)?
  // Guarded by its own lock: the accumulators by loop id.
  private let state = GuardedState(State())
  // Where the instrument is attached.
  private let attachments = Attachments()

  private struct State {
    var loops: [UInt64: LoopAccumulator] = [:]
    // Last snapshots of loops whose thread exited, oldest first in exitOrder.
    var exited: [UInt64: LoopMetricsSnapshot] = [:]
    var exitOrder: [UInt64] = []
  }

  /// Creates the instrument.
  ///
  /// - Parameters:
  ///   - factory: where to export through swift-metrics (for example
  ///     `MetricsSystem.factory`); `nil` keeps the numbers in snapshots only.
  ///   - labelPrefix: the prefix of the exported labels.
  ///
  /// ```swift
  /// let metrics = LoopMetrics()  // snapshots only
  /// ```
  public init(exportingTo factory: (any MetricsFactory)? = nil, labelPrefix: String = "runloop") {
    self.factory = factory
    self.labelPrefix = labelPrefix
  }

  /// Measures `loop` from its next activity on. Attaching twice does nothing.
  ///
  /// ```swift
  /// metrics.attach(to: .current)
  /// ```
  public func attach(to loop: EventRunLoop) {
    attachments.attach(self, to: loop)
  }

  /// Measures every loop of the process.
  ///
  /// ```swift
  /// metrics.attachToAllLoops()
  /// ```
  public func attachToAllLoops() {
    attachments.attachToAllLoops(self)
  }

  /// Stops measuring; snapshots stay available.
  ///
  /// ```swift
  /// metrics.detach()
  /// ```
  public func detach() {
    attachments.detach(self)
  }

  /// The measurements of `loop` so far, or `nil` when it was never seen.
  ///
  /// ```swift
  /// let snapshot = metrics.snapshot(of: loop)
  /// ```
  public func snapshot(of loop: EventRunLoop) -> LoopMetricsSnapshot? {
    snapshot(ofLoopID: loop.id)
  }

  /// The measurements of the loop with id `loopID`, or `nil` when it was never seen.
  ///
  /// ```swift
  /// let snapshot = metrics.snapshot(ofLoopID: record.loop)
  /// ```
  public func snapshot(ofLoopID loopID: UInt64) -> LoopMetricsSnapshot? {
    state.withLock { $0.loops[loopID]?.snapshot(loopID: loopID) ?? $0.exited[loopID] }
  }

  /// Snapshots of every loop seen, by loop id.
  ///
  /// ```swift
  /// for (id, snapshot) in metrics.snapshots() { print(id, snapshot.iterations) }
  /// ```
  public func snapshots() -> [UInt64: LoopMetricsSnapshot] {
    state.withLock { state in
      state.loops.reduce(into: state.exited) { $0[$1.key] = $1.value.snapshot(loopID: $1.key) }
    }
  }

  /// Forgets the running state of the loop of an exited thread; its last snapshot stays
  /// available (for the ``retainedExitedLoops`` most recently exited loops).
  ///
  /// ```swift
  /// // the loop calls this on its thread as the thread exits
  /// ```
  public func runLoopThreadDidExit(_ loop: EventRunLoop) {
    attachments.forget(loop)
    state.withLock { state in
      guard let accumulator = state.loops.removeValue(forKey: loop.id) else { return }
      state.exited[loop.id] = accumulator.snapshot(loopID: loop.id)
      state.exitOrder.append(loop.id)
      while state.exitOrder.count > Self.retainedExitedLoops {
        state.exited[state.exitOrder.removeFirst()] = nil
      }
    }
  }

  /// How many exited loops keep their last snapshot.
  ///
  /// ```swift
  /// let kept = LoopMetrics.retainedExitedLoops
  /// ```
  public static let retainedExitedLoops = 64

  /// Counts passes and runs, and times runs: from the outermost entry, or, when the metrics
  /// was attached during a run, from the first event it hears, to the outermost exit.
  ///
  /// ```swift
  /// loop.addInstrument(metrics)  // the loop calls this on its thread
  /// ```
  public func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    let outermostExit = activity == .exit && info.depth == 1
    let exported = withAccumulator(info.loopID) { accumulator -> ExportedMetrics? in
      // The clock is read only when a run starts being timed and at the outermost exit.
      if accumulator.runStart == nil || outermostExit {
        let now = TraceClock.monotonicNow()
        accumulator.noteEvent(at: now)
        if outermostExit, let start = accumulator.runStart {
          accumulator.runNanoseconds += now - start
          accumulator.runStart = nil
        }
      }
      switch activity {
      case .beforeTimers:
        accumulator.iterations += 1
        accumulator.notePerformQueue(loop.queuedPerformRequests)
      case .beforeWaiting:
        // Again before a sleep, so that a loop gone idle shows the queue it left.
        accumulator.notePerformQueue(loop.queuedPerformRequests)
      case .entry: accumulator.runs += 1
      default: break
      }
      return accumulator.exported
    }
    if activity == .beforeTimers || activity == .beforeWaiting {
      if activity == .beforeTimers { exported?.iterations.increment() }
      exported?.performQueueDepth.record(loop.queuedPerformRequests)
    }
  }

  /// Counts and times call-outs; records lateness and signal latency. A call-out's time is
  /// its own: what nested runs started from it spent in their call-outs and sleeps is
  /// counted there, not again in the enclosing call-out.
  ///
  /// ```swift
  /// loop.addInstrument(metrics)  // the loop calls this on its thread
  /// ```
  public func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo)
  {
    let start = TraceClock.nanoseconds(of: callout.start)
    let duration = TraceClock.nanoseconds(callout.duration)
    let latency = callout.dueAt.map { TraceClock.nanoseconds(callout.start - $0) }
    let (exported, own) = withAccumulator(info.loopID) {
      accumulator -> (ExportedMetrics?, Int64) in
      accumulator.noteEvent(at: start)
      let own = accumulator.ownTime(ofCalloutAt: info.depth, lasting: duration)
      accumulator.calloutCounts[callout.kind.name, default: 0] += 1
      accumulator.calloutNanoseconds[callout.kind.name, default: 0] += own
      if let latency {
        if callout.kind == .timer {
          _ = accumulator.timerLateness.record(UInt64(max(0, latency)))
        } else if callout.kind == .source {
          _ = accumulator.signalToPerform.record(UInt64(max(0, latency)))
        }
        accumulator.recordDelay(latency, kind: callout.kind.name)
      }
      return (accumulator.exported, own)
    }
    guard let exported else { return }
    // Made outside every lock of this instrument: the factory is user code.
    exported.calloutTimer(kind: callout.kind.name).recordNanoseconds(own)
    if let latency {
      exported.delayTimer(kind: callout.kind.name).recordNanoseconds(max(0, latency))
      if callout.kind == .timer { exported.timerLateness.recordNanoseconds(max(0, latency)) }
      if callout.kind == .source { exported.signalToPerform.recordNanoseconds(max(0, latency)) }
    }
  }

  /// Adds up time asleep.
  ///
  /// ```swift
  /// loop.addInstrument(metrics)  // the loop calls this on its thread
  /// ```
  public func runLoop(
    _ loop: EventRunLoop, didSleepFrom start: ContinuousClock.Instant,
    to end: ContinuousClock.Instant, _ info: LoopPassInfo
  ) {
    let length = TraceClock.nanoseconds(end - start)
    let from = TraceClock.nanoseconds(of: start)
    let spins = loop.spinStatistics
    let (exported, newSpins, newCatches, utilization) = withAccumulator(info.loopID) {
      accumulator -> (ExportedMetrics?, UInt64, UInt64, Double) in
      accumulator.noteEvent(at: from)
      accumulator.asleepNanoseconds += length
      // A sleep of a nested run is time the enclosing call-out did not spend working.
      if info.depth > 1 { accumulator.addNested(length, atDepth: info.depth) }
      // The counters add up to the loop's own totals, as the snapshot does: the first sleep
      // seen brings in the polls the loop made before the metrics were attached.
      let seen = accumulator.spins
      accumulator.spins = spins
      return (
        accumulator.exported, spins.spins &- (seen?.spins ?? 0),
        spins.caught &- (seen?.caught ?? 0),
        accumulator.utilization(at: TraceClock.adding(from, length))
      )
    }
    exported?.asleep.recordNanoseconds(length)
    exported?.utilization.record(utilization)
    if newSpins > 0 { exported?.spins.increment(by: Int64(clamping: newSpins)) }
    if newCatches > 0 { exported?.spinsCaught.increment(by: Int64(clamping: newCatches)) }
  }

  private func withAccumulator<Result>(
    _ loopID: UInt64, _ body: (inout LoopAccumulator) -> Result
  ) -> Result {
    if let result = state.withLock({ state in
      state.loops[loopID] == nil ? nil : body(&state.loops[loopID]!)
    }) {
      return result
    }
    // First event of this loop: make its swift-metrics objects with no lock held (the
    // factory is user code, which may well call back into this instrument).
    let exported = factory.map {
      ExportedMetrics(prefix: labelPrefix, loopID: loopID, factory: $0)
    }
    return state.withLock { state in
      if state.loops[loopID] == nil {
        state.loops[loopID] = LoopAccumulator(exported: exported)
      }
      return body(&state.loops[loopID]!)
    }
  }
}

/// One loop's running totals.
package struct LoopAccumulator {
  var iterations: UInt64 = 0
  var runs: UInt64 = 0
  var runStart: Int64?
  var runNanoseconds: Int64 = 0
  var asleepNanoseconds: Int64 = 0
  var calloutCounts: [String: UInt64] = [:]
  var calloutNanoseconds: [String: Int64] = [:]
  // By run depth: time that call-outs and sleeps at that depth spent since the enclosing
  // call-out (one depth up) began, to take out of that call-out's own time.
  var nested: [Int64] = []
  var timerLateness = LoopAccumulator.makeHistogram()
  var signalToPerform = LoopAccumulator.makeHistogram()
  // Due time to call-out start, by call-out kind.
  var delays: [String: Histogram<UInt64>] = [:]
  // The loop's spin statistics at its latest sleep (nil before the first one).
  var spins: LoopSpinStatistics?
  var performQueueDepth = 0
  var performQueueMax = 0
  let exported: ExportedMetrics?

  init(exported: ExportedMetrics?) {
    self.exported = exported
  }

  /// Starts timing the run at the first event heard, in case the metrics was attached while
  /// the loop was already running (no outermost entry will come).
  mutating func noteEvent(at nanoseconds: Int64) {
    if runStart == nil { runStart = nanoseconds }
  }

  /// The perform queue's depth now (one atomic load on the loop's side).
  mutating func notePerformQueue(_ depth: Int) {
    performQueueDepth = depth
    performQueueMax = max(performQueueMax, depth)
  }

  mutating func addNested(_ nanoseconds: Int64, atDepth depth: Int) {
    guard depth >= 0 else { return }
    if nested.count <= depth { nested += repeatElement(0, count: depth + 1 - nested.count) }
    nested[depth] += nanoseconds
  }

  /// The own time of a call-out made at run depth `depth` that lasted `duration`: minus the
  /// call-outs and sleeps of the runs nested in it (deeper), which it then stands for one
  /// level up.
  mutating func ownTime(ofCalloutAt depth: Int, lasting duration: Int64) -> Int64 {
    var inner: Int64 = 0
    if nested.count > depth + 1 {
      for deeper in (depth + 1)..<nested.count {
        inner += nested[deeper]
        nested[deeper] = 0
      }
    }
    // Only what is nested in something needs remembering: depth 1 is the outermost run.
    if depth > 1 { addNested(duration, atDepth: depth) }
    return max(0, duration - inner)
  }

  mutating func recordDelay(_ nanoseconds: Int64, kind: String) {
    if delays[kind] == nil { delays[kind] = Self.makeHistogram() }
    _ = delays[kind]!.record(UInt64(max(0, nanoseconds)))
  }

  /// Busy over busy plus asleep, from the first event heard to `now`.
  func utilization(at now: Int64) -> Double {
    let inRuns = runNanoseconds + (runStart.map { max(0, now - $0) } ?? 0)
    guard inRuns > 0 else { return 0 }
    return min(1, max(0, Double(inRuns - asleepNanoseconds) / Double(inRuns)))
  }

  package static func makeHistogram() -> Histogram<UInt64> {
    // 1 ns to 60 s at 3 significant digits; grows past that instead of failing.
    var histogram = Histogram<UInt64>(
      lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000_000,
      numberOfSignificantValueDigits: .three)
    histogram.autoResize = true
    return histogram
  }

  func snapshot(loopID: UInt64) -> LoopMetricsSnapshot {
    let running = runStart.map { TraceClock.monotonicNow() - $0 } ?? 0
    let inRuns = runNanoseconds + running
    var callouts: [String: LoopMetricsSnapshot.CalloutTotals] = [:]
    for (kind, count) in calloutCounts {
      callouts[kind] = .init(count: count, totalNanoseconds: calloutNanoseconds[kind] ?? 0)
    }
    var snapshot = LoopMetricsSnapshot(
      loopID: loopID, iterations: iterations, runs: runs, asleepNanoseconds: asleepNanoseconds,
      busyNanoseconds: max(0, inRuns - asleepNanoseconds), callouts: callouts,
      timerLateness: Self.latency(timerLateness), signalToPerform: Self.latency(signalToPerform),
      spins: spins ?? LoopSpinStatistics(spins: 0, caught: 0, spinTime: .zero),
      performQueueDepth: performQueueDepth, performQueueMax: performQueueMax)
    snapshot.delays = delays.mapValues(Self.latency)
    return snapshot
  }

  package static func latency(_ histogram: Histogram<UInt64>) -> LoopMetricsSnapshot.Latency {
    guard histogram.totalCount > 0 else { return .init(count: 0, p50: 0, p99: 0, max: 0) }
    return .init(
      count: histogram.totalCount, p50: Int64(histogram.valueAtPercentile(50)),
      p99: Int64(histogram.valueAtPercentile(99)), max: Int64(histogram.max))
  }
}

/// The swift-metrics objects of one loop, made once.
final class ExportedMetrics: Sendable {
  let iterations: Counter
  let asleep: CoreMetrics.Timer
  let timerLateness: CoreMetrics.Timer
  let signalToPerform: CoreMetrics.Timer
  let spins: Counter
  let spinsCaught: Counter
  let utilization: Recorder
  let performQueueDepth: Gauge
  private let prefix: String
  private let dimensions: [(String, String)]
  private let factory: any MetricsFactory
  // Guarded by its own lock: call-out timers by kind.
  private let calloutTimers = GuardedState<[String: CoreMetrics.Timer]>([:])
  // Guarded by its own lock: delay timers by kind.
  private let delayTimers = GuardedState<[String: CoreMetrics.Timer]>([:])

  init(prefix: String, loopID: UInt64, factory: any MetricsFactory) {
    self.prefix = prefix
    self.factory = factory
    let dimensions = [("loop", String(loopID))]
    self.dimensions = dimensions
    iterations = Counter(label: "\(prefix).iterations", dimensions: dimensions, factory: factory)
    asleep = CoreMetrics.Timer(
      label: "\(prefix).sleep", dimensions: dimensions, factory: factory)
    timerLateness = CoreMetrics.Timer(
      label: "\(prefix).timer.lateness", dimensions: dimensions, factory: factory)
    signalToPerform = CoreMetrics.Timer(
      label: "\(prefix).source.latency", dimensions: dimensions, factory: factory)
    spins = Counter(label: "\(prefix).spins", dimensions: dimensions, factory: factory)
    spinsCaught = Counter(
      label: "\(prefix).spins.caught", dimensions: dimensions, factory: factory)
    utilization = Recorder(
      label: "\(prefix).utilization", dimensions: dimensions, aggregate: false, factory: factory)
    performQueueDepth = Gauge(
      label: "\(prefix).perform.queue.depth", dimensions: dimensions, factory: factory)
  }

  func delayTimer(kind: String) -> CoreMetrics.Timer {
    timer(kind: kind, label: "\(prefix).callout.delay", in: delayTimers)
  }

  func calloutTimer(kind: String) -> CoreMetrics.Timer {
    timer(kind: kind, label: "\(prefix).callout.duration", in: calloutTimers)
  }

  /// The timer of `kind` under `label`, made on first use, with no lock held (the factory is
  /// user code).
  private func timer(
    kind: String, label: String, in cache: GuardedState<[String: CoreMetrics.Timer]>
  ) -> CoreMetrics.Timer {
    if let timer = cache.withLock({ $0[kind] }) { return timer }
    let made = CoreMetrics.Timer(
      label: label, dimensions: dimensions + [("kind", kind)], factory: factory)
    return cache.withLock { timers in
      if let timer = timers[kind] { return timer }
      timers[kind] = made
      return made
    }
  }

}
