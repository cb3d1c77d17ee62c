import RunLoopCore

/// What the ``StallWatchdog`` knows of one loop: since when it has been awake, where it is
/// (mode, depth, pass, the call-outs it is in) and whether this stall was reported. Written
/// by the loop thread, read by the watchdog's thread, behind one lock.
final class _WatchedLoop: @unchecked Sendable {
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

  private struct State {
    var awakeSince: Int64?
    var reported = false
    var mode = "default"
    var depth = 0
    var iteration: UInt64 = 0
    // The call-outs the loop is in, outermost first.
    var callouts: [(kind: String, name: String)] = []
  }

  let loop: UInt64
  let tid: Int32
  private let state = GuardedState(State())

  init(loop: UInt64, tid: Int32) {
    self.loop = loop
    self.tid = tid
  }

  /// The loop reached `activity` at `now`: it is awake from a wake-up or the start of an
  /// outermost run, and no longer from `beforeWaiting` or the end of its outermost run.
  /// Returns the recovery to report when it had been reported stalled.
  func reach(_ activity: LoopActivity, _ info: LoopPassInfo, now: Int64) -> Recovery? {
    state.withLock { state -> Recovery? in
      state.mode = info.mode.name
      state.depth = info.depth
      state.iteration = info.iteration
      let sleeps = activity == .beforeWaiting || (activity == .exit && info.depth <= 1)
      if sleeps {
        defer {
          state.awakeSince = nil
          state.reported = false
          if activity == .exit { state.callouts.removeAll() }
        }
        guard state.reported, let since = state.awakeSince else { return nil }
        return Recovery(
          awakeSince: since, mode: state.mode, depth: state.depth, iteration: state.iteration)
      }
      if state.awakeSince == nil { state.awakeSince = now }
      return nil
    }
  }

  /// A call-out starts (a loop that was not known to be awake is from now).
  func enter(kind: String, name: String, _ info: LoopPassInfo, now: Int64) {
    state.withLock { state in
      state.callouts.append((kind, name))
      state.depth = info.depth
      state.mode = info.mode.name
      if state.awakeSince == nil { state.awakeSince = now }
    }
  }

  /// The innermost call-out returned.
  func leave() {
    state.withLock { state in _ = state.callouts.popLast() }
  }

  /// The stall to report at `now`: awake for `threshold` or more and not reported yet (it
  /// is marked reported).
  func stall(now: Int64, threshold: Int64) -> Stall? {
    state.withLock { state -> Stall? in
      guard !state.reported, let since = state.awakeSince, now - since >= threshold else {
        return nil
      }
      state.reported = true
      return Stall(
        loop: loop, tid: tid, awakeSince: since, mode: state.mode, depth: state.depth,
        iteration: state.iteration, calloutKind: state.callouts.last?.kind,
        calloutName: state.callouts.last?.name)
    }
  }
}
