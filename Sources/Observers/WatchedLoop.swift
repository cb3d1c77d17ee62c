import RunLoopCore

/// What the ``StallWatchdog`` knows of one loop: since when it has been awake, where it is
/// (mode, depth, pass, the call-outs it is in) and whether this stall was reported. Kept
/// under the watchdog's lock with the other loops, so that a notification takes that one lock
/// (finding the loop and updating it) and not a second, per-loop one.
struct WatchedLoop {
  struct Stall {
    var loop: UInt64
    var tid: Int32
    var awakeSince: Int64
    var mode: String
    var depth: Int
    var iteration: UInt64
    var calloutKind: String?
    var calloutName: String?
  }

  struct Recovery {
    var awakeSince: Int64
    var mode: String
    var depth: Int
    var iteration: UInt64
  }

  let loop: UInt64
  let tid: Int32
  private var awakeSince: Int64?
  private var reported = false
  private var mode = "default"
  private var depth = 0
  private var iteration: UInt64 = 0
  // The call-outs the loop is in, outermost first.
  private var callouts: [(kind: String, name: String)] = []

  init(loop: UInt64, tid: Int32) {
    self.loop = loop
    self.tid = tid
  }

  /// The loop reached `activity` at `now`: it is awake from a wake-up or the start of an
  /// outermost run, and no longer from `beforeWaiting` or the end of its outermost run.
  /// Returns the recovery to report when it had been reported stalled.
  mutating func reach(_ activity: LoopActivity, _ info: LoopPassInfo, now: Int64) -> Recovery? {
    mode = info.mode.name
    depth = info.depth
    iteration = info.iteration
    let sleeps = activity == .beforeWaiting || (activity == .exit && info.depth <= 1)
    if sleeps {
      defer {
        awakeSince = nil
        reported = false
        if activity == .exit { callouts.removeAll() }
      }
      guard reported, let since = awakeSince else { return nil }
      return Recovery(awakeSince: since, mode: mode, depth: depth, iteration: iteration)
    }
    if awakeSince == nil { awakeSince = now }
    return nil
  }

  /// A call-out starts (a loop that was not known to be awake is from now).
  mutating func enter(kind: String, name: String, _ info: LoopPassInfo, now: Int64) {
    callouts.append((kind, name))
    depth = info.depth
    mode = info.mode.name
    if awakeSince == nil { awakeSince = now }
  }

  /// The innermost call-out returned.
  mutating func leave() {
    _ = callouts.popLast()
  }

  /// The stall to report at `now`: awake for `threshold` or more and not reported yet (it
  /// is marked reported).
  mutating func stall(now: Int64, threshold: Int64) -> Stall? {
    guard !reported, let since = awakeSince, now - since >= threshold else { return nil }
    reported = true
    return Stall(
      loop: loop, tid: tid, awakeSince: since, mode: mode, depth: depth,
      iteration: iteration, calloutKind: callouts.last?.kind, calloutName: callouts.last?.name)
  }
}
