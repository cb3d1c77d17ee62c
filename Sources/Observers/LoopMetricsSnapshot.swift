import RunLoopCore

/// What ``LoopMetrics`` has measured on one loop, at one moment.
///
/// ```swift
/// if let snapshot = metrics.snapshot(of: loop) {
///   print(snapshot.iterations, snapshot.asleepFraction, snapshot.timerLateness.p99)
/// }
/// ```
public struct LoopMetricsSnapshot: Sendable, Hashable {
  /// The loop's ``/RunLoopCore/EventRunLoop/id``.
  public var loopID: UInt64
  /// Passes of the loop seen (each pass reports `beforeTimers` once).
  public var iterations: UInt64
  /// Runs entered.
  public var runs: UInt64
  /// Nanoseconds the loop spent asleep.
  public var asleepNanoseconds: Int64
  /// Nanoseconds spent in runs while awake (in runs, minus asleep).
  public var busyNanoseconds: Int64
  /// Call-out counts and time, by call-out kind name (`timer`, `source`, ...).
  public var callouts: [String: CalloutTotals]
  /// How late timers fired: call-out start minus the timer's fire date.
  public var timerLateness: Latency
  /// How long custom sources waited from their signal to their perform call-out.
  public var signalToPerform: Latency
  /// What the loop's polling before sleep did, as of its latest sleep (see
  /// ``/RunLoopCore/EventRunLoop/spinLimit``): polls, polls that caught work, time polling.
  ///
  /// ```swift
  /// print("\(snapshot.spins.caught) of \(snapshot.spins.spins) polls caught work")
  /// ```
  public var spins: LoopSpinStatistics
  /// Perform requests queued at the start of the loop's latest pass or before its latest
  /// sleep, whichever came last (see ``/RunLoopCore/EventRunLoop/queuedPerformRequests``).
  ///
  /// ```swift
  /// let backlog = snapshot.performQueueDepth
  /// ```
  public var performQueueDepth: Int
  /// The most perform requests seen queued at the start of a pass or before a sleep (at most
  /// ``/RunLoopCore/EventRunLoop/performQueueLimit`` from other threads).
  ///
  /// ```swift
  /// let worst = snapshot.performQueueMax
  /// ```
  public var performQueueMax: Int
  /// How long call-outs waited, by call-out kind, in nanoseconds: from the moment their
  /// work became due to the start of the call-out (a timer's fire date, a source's signal,
  /// a perform request's queueing, a port message's sending, a job's enqueueing; whatever
  /// the loop or module reports as the call-out's due time).
  ///
  /// ```swift
  /// let queued = snapshot.delays["block"]?.p99 ?? 0  // perform requests, queue to run
  /// ```
  public var delays: [String: Latency] = [:]

  /// Creates a snapshot (``LoopMetrics`` does this).
  ///
  /// ```swift
  /// let empty = LoopMetricsSnapshot(
  ///   loopID: 1, iterations: 0, runs: 0, asleepNanoseconds: 0, busyNanoseconds: 0,
  ///   callouts: [:], timerLateness: .init(count: 0, p50: 0, p99: 0, max: 0),
  ///   signalToPerform: .init(count: 0, p50: 0, p99: 0, max: 0))
  /// ```
  package init(
    loopID: UInt64, iterations: UInt64, runs: UInt64, asleepNanoseconds: Int64,
    busyNanoseconds: Int64, callouts: [String: CalloutTotals], timerLateness: Latency,
    signalToPerform: Latency,
    spins: LoopSpinStatistics = LoopSpinStatistics(spins: 0, caught: 0, spinTime: .zero),
    performQueueDepth: Int = 0, performQueueMax: Int = 0
  ) {
    self.spins = spins
    self.performQueueDepth = performQueueDepth
    self.performQueueMax = performQueueMax
    self.loopID = loopID
    self.iterations = iterations
    self.runs = runs
    self.asleepNanoseconds = asleepNanoseconds
    self.busyNanoseconds = busyNanoseconds
    self.callouts = callouts
    self.timerLateness = timerLateness
    self.signalToPerform = signalToPerform
  }

  /// The loop's utilization as Node.js defines it for its event loop: busy time over busy
  /// plus asleep time, from 0 to 1 (0 before any run).
  ///
  /// ```swift
  /// if snapshot.utilization > 0.9 { print("loop \(snapshot.loopID) is saturated") }
  /// ```
  public var utilization: Double {
    let total = asleepNanoseconds + busyNanoseconds
    return total > 0 ? Double(busyNanoseconds) / Double(total) : 0
  }

  /// The share of run time spent asleep, from 0 to 1 (0 before any run time).
  ///
  /// ```swift
  /// print("asleep \(Int(snapshot.asleepFraction * 100))%")
  /// ```
  public var asleepFraction: Double {
    let total = asleepNanoseconds + busyNanoseconds
    return total > 0 ? Double(asleepNanoseconds) / Double(total) : 0
  }
}
