import RunLoopCore

/// The timers of one set of modes, in one heap ordered by date, and the rule that decides
/// when the loop wakes for them: sd-event's earliest/latest rule.
///
/// A timer with date `d` and tolerance `t` may fire anywhere in `[d, d + t]`. The *earliest*
/// instant anything may fire is the heap's top; the *latest* instant the loop may sleep to
/// is `L`, the earliest end of a window (``earliestLatestKey()``). The loop asks to wake by
/// `L`, at the latest date that is not after it (``latestKey(atMost:)``): the same timers are
/// due then as at `L`, each inside its window with the rest of it to absorb the wake-up's
/// latency, and every timer whose window has opened by then fires, so timers with
/// overlapping windows share one wake-up.
///
/// Each query walks the heap from the top and skips a subtree as soon as its root's date is
/// past what can matter (nothing below is earlier), so it reads about the timers it will
/// fire. A queue with no tolerant timer answers from the top alone.
///
/// A timer is in exactly one queue, the one of its set of modes (a timer added to a second
/// mode moves to that pair's queue), so it has one node and one position whatever its modes.
struct TimerQueue {
  /// The set of modes, in no particular order; `.common` stands for the loop's common modes.
  let modes: [LoopMode]
  private(set) var heap = TimerHeap()
  /// How many linked timers have a tolerance: with none, every window is its date.
  private(set) var tolerantCount = 0

  init(modes: [LoopMode]) {
    self.modes = modes
  }

  var count: Int { heap.count }

  /// Whether a run in `mode` fires these: one of the set is `mode` itself, or `.common`
  /// while `mode` is a common mode.
  func serves(_ mode: ActiveMode) -> Bool {
    modes.contains(where: mode.includes)
  }

  /// Whether this is the queue of exactly `modes` (a set).
  func holds(_ modes: [LoopMode]) -> Bool {
    self.modes.count == modes.count && modes.allSatisfy(self.modes.contains)
  }

  /// Inserts `timer`; returns whether the queue's wake-up may have moved earlier.
  mutating func insert(_ timer: LoopTimer) -> Bool {
    let before = earliestLatestKey()
    heap.insert(timer)
    if timer.packed.hasTolerance { tolerantCount += 1 }
    return before.map { timer.packed.latestKey < $0 } ?? true
  }

  mutating func remove(_ timer: LoopTimer) {
    heap.remove(timer)
    if timer.packed.hasTolerance { tolerantCount -= 1 }
  }

  /// Gives `timer` (in this queue) `schedule` and moves it; returns whether the queue's
  /// wake-up may have moved earlier.
  mutating func reschedule(_ timer: LoopTimer, to schedule: TimerSchedule) -> Bool {
    let before = earliestLatestKey()
    if timer.packed.hasTolerance { tolerantCount -= 1 }
    timer.packed.schedule = schedule
    if timer.packed.hasTolerance { tolerantCount += 1 }
    heap.update(timer)
    return before.map { timer.packed.latestKey < $0 } ?? true
  }

  /// `L`: the earliest end of a window, or `nil` when the queue is empty.
  func earliestLatestKey() -> Int64? {
    guard let top = heap.top else { return nil }
    guard tolerantCount > 0 else { return top.key }
    var best = Int64.max
    heap.descend { node in
      // A window that opens after `best` ends after it too, as do all below.
      guard node.key <= best else { return false }
      best = min(best, node.timer._withUnsafeGuaranteedRef { $0.packed.latestKey })
      return true
    }
    return best
  }

  /// The latest date that is at most `limit`, or `nil` when every date is later.
  func latestKey(atMost limit: Int64) -> Int64? {
    guard tolerantCount > 0 else { return heap.top.flatMap { $0.key <= limit ? $0.key : nil } }
    var best: Int64?
    heap.descend { node in
      guard node.key <= limit else { return false }
      best = max(best ?? node.key, node.key)
      return true
    }
    return best
  }

  /// The first node in `(key, sequence)` order whose date is at most `now` and whose
  /// sequence is below `horizon`. A node that fails only the sequence test (a timer
  /// rescheduled during the current round of firing) does not hide the nodes below it.
  func firstDue(now: Int64, before horizon: UInt64) -> TimerHeap.Node? {
    var best: TimerHeap.Node?
    heap.descend { node in
      guard node.key <= now, best.map(node.precedes) ?? true else { return false }
      guard node.sequence >= horizon else {
        // Everything below comes out later.
        best = node
        return false
      }
      return true
    }
    return best
  }

  mutating func releaseAll() {
    heap.releaseAll()
    tolerantCount = 0
  }
}
