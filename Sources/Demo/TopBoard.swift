import RunLoopTracing

/// What `runloop-demo top` knows about each loop of a trace, fed the records as the JSON log
/// grows: its state now (from its latest record: a loop whose latest record is
/// `beforeWaiting` is asleep; an outermost `exit`, not running; anything else, awake), its
/// mode, its time in runs and asleep, its sleeps of the last seconds (for the recent
/// utilization), call-out delays and stalls.
///
/// A call-out's record is written when it ends, so a loop stuck in a call-out shows as awake
/// for longer and longer; past the stall threshold it is marked STALLED.
struct TopBoard {
  struct Loop {
    var loop: UInt64
    var thread: String
    var tid: Int32
    var mode = "default"
    var lastActivity = ""
    var lastDepth = 1
    var lastTimestamp: Int64 = 0
    var firstTimestamp: Int64 = 0
    // Outermost run: when the current one began (nil outside a run), and the total of the
    // ended ones.
    var runStart: Int64?
    var runNanoseconds: Int64 = 0
    var asleepNanoseconds: Int64 = 0
    // When the current sleep began (the latest record is its beforeWaiting).
    var asleepSince: Int64?
    // Sleeps that ended recently: (start, end), oldest first.
    var recentSleeps: [(start: Int64, end: Int64)] = []
    var passes: [Int64] = []
    var delays: [Int64] = []
    var lastSleepEnd: Int64 = .min
    // Call-outs past the threshold that never slept; and the watchdog's stall records, which
    // count instead when the log has them.
    var longCallouts = 0
    var watchdogStalls = 0
    var stalledSince: Int64?
    var stalledIn: String?
    var lastStall: String?

    var stalls: Int { watchdogStalls > 0 ? watchdogStalls : longCallouts }
  }

  /// Call-outs at least this long count as stalls, and so does a loop awake this long.
  let stallThreshold: Int64
  private(set) var loops: [UInt64: Loop] = [:]
  private(set) var records = 0
  /// The first run ids seen, at most ``runLimit`` of them (a damaged log could have one per
  /// line), and whether there were more.
  private(set) var runs: Set<String> = []
  private(set) var moreRuns = false
  static let runLimit = 20

  init(stallThreshold: Int64) {
    self.stallThreshold = stallThreshold
  }

  mutating func add(_ record: TraceRecord) {
    records += 1
    if runs.count < Self.runLimit || runs.contains(record.run) {
      runs.insert(record.run)
    } else {
      moreRuns = true
    }
    var loop =
      loops[record.loop]
      ?? Loop(
        loop: record.loop, thread: record.thread, tid: record.tid,
        firstTimestamp: record.timestamp)
    loop.mode = record.mode
    if record.record != .stall {
      loop.lastTimestamp = max(loop.lastTimestamp, record.endTimestamp)
    }
    switch record.record {
    case .loss:
      // The JSON sink's own record: the loss is its writer's, not a loop's.
      break
    case .stall:
      // The watchdog's report: the loop is stuck in this call-out, awake since `timestamp`.
      loop.stalledSince = record.timestamp
      loop.stalledIn = record.calloutKind.map { "\($0) \(record.calloutName ?? "")" }
      loop.watchdogStalls += 1
      loop.lastStall =
        "\(loop.stalledIn ?? "outside call-outs") (watchdog, state \(record.threadState ?? "?"))"
    case .recovery:
      loop.stalledSince = nil
      loop.stalledIn = nil
    case .activity:
      let activity = record.activity ?? ""
      loop.lastActivity = activity
      loop.lastDepth = record.depth
      loop.asleepSince = activity == "beforeWaiting" ? record.timestamp : nil
      if activity == "entry" && record.depth == 1 { loop.runStart = record.timestamp }
      if activity == "exit" && record.depth == 1 {
        loop.runNanoseconds = loop.runNanoseconds.saturatingAdding(
          record.timestamp.saturatingSubtracting(loop.runStart ?? loop.firstTimestamp))
        loop.runStart = nil
      }
      if activity == "beforeTimers" { Self.keep(&loop.passes, record.timestamp, 4096) }
    case .callout:
      loop.lastActivity = "callout"
      if let lateness = record.lateness { Self.keep(&loop.delays, max(0, lateness), 2048) }
      // A call-out that slept (in a nested run) was not stuck: only one that stayed awake.
      let sleptInside = loop.lastSleepEnd > record.timestamp
      if let duration = record.duration, duration >= stallThreshold, !sleptInside,
        loop.watchdogStalls == 0
      {
        loop.longCallouts += 1
        loop.lastStall =
          "\(record.calloutKind ?? "?") \(record.calloutName ?? "") \(milliseconds(nanoseconds: duration)) ms"
      }
    case .sleep:
      let duration = record.duration ?? 0
      loop.asleepNanoseconds = loop.asleepNanoseconds.saturatingAdding(duration)
      loop.asleepSince = nil
      loop.lastActivity = "afterWaiting"
      loop.recentSleeps.append((record.timestamp, record.endTimestamp))
      loop.lastSleepEnd = max(loop.lastSleepEnd, record.endTimestamp)
      if loop.recentSleeps.count > 4096 { loop.recentSleeps.removeFirst(1024) }
    }
    loops[record.loop] = loop
  }

  private static func keep(_ values: inout [Int64], _ value: Int64, _ limit: Int) {
    values.append(value)
    if values.count > limit { values.removeFirst(limit / 4) }
  }

  /// The loop's state at `now` (CLOCK_BOOTTIME nanoseconds), for people.
  func state(of loop: Loop, now: Int64) -> String {
    if let since = loop.stalledSince {
      return
        "STALLED \(Self.seconds(now.saturatingSubtracting(since))) in \(loop.stalledIn ?? "no call-out")"
    }
    if let since = loop.asleepSince {
      return "asleep \(Self.seconds(now.saturatingSubtracting(since)))"
    }
    if loop.lastActivity == "exit" && loop.lastDepth == 1 { return "not running" }
    let awake = now.saturatingSubtracting(loop.lastTimestamp)
    if awake >= stallThreshold { return "STALLED \(Self.seconds(awake))" }
    return "awake"
  }

  /// Busy over busy plus asleep in the `window` nanoseconds up to `now`.
  func recentUtilization(of loop: Loop, now: Int64, window: Int64) -> Double? {
    // Only the part of the window the loop spent in its current run.
    guard let runStart = loop.runStart else { return nil }
    let from = max(now.saturatingSubtracting(window), runStart)
    guard now > from else { return nil }
    // Saturating throughout: a damaged log may hold any times.
    var asleep: Int64 = 0
    for sleep in loop.recentSleeps.reversed() {
      if sleep.end <= from { break }
      asleep = asleep.saturatingAdding(
        max(0, min(sleep.end, now).saturatingSubtracting(max(sleep.start, from))))
    }
    if let since = loop.asleepSince {
      asleep = asleep.saturatingAdding(now.saturatingSubtracting(max(since, from)))
    }
    return min(1, max(0, 1 - Double(asleep) / Double(now.saturatingSubtracting(from))))
  }

  /// Busy over busy plus asleep since the loop's first record.
  func totalUtilization(of loop: Loop, now: Int64) -> Double {
    let current = loop.runStart.map { now.saturatingSubtracting($0) } ?? 0
    let inRuns = loop.runNanoseconds.saturatingAdding(current)
    let asleep = loop.asleepNanoseconds.saturatingAdding(
      loop.asleepSince.map { now.saturatingSubtracting($0) } ?? 0)
    guard inRuns > 0 else { return 0 }
    return min(1, max(0, 1 - Double(asleep) / Double(inRuns)))
  }

  /// Passes per second over the `window` up to `now`.
  func passRate(of loop: Loop, now: Int64, window: Int64) -> Double {
    let recent = loop.passes.reversed().prefix { $0 > now.saturatingSubtracting(window) }.count
    return Double(recent) / (Double(window) / 1e9)
  }

  /// p50, p99 and max of the recent call-out delays, in milliseconds; `nil` when none.
  func delayPercentiles(of loop: Loop) -> (p50: String, p99: String, max: String)? {
    guard !loop.delays.isEmpty else { return nil }
    let sorted = loop.delays.sorted()
    func at(_ fraction: Double) -> Int64 {
      sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.down)))]
    }
    return (
      milliseconds(nanoseconds: at(0.5)), milliseconds(nanoseconds: at(0.99)),
      milliseconds(nanoseconds: sorted.last!)
    )
  }

  static func seconds(_ nanoseconds: Int64) -> String {
    "\((Double(max(0, nanoseconds)) / 1e8).rounded() / 10) s"
  }
}
