/// The timers of one mode key that have a tolerance, and the rule that lets one wake-up
/// serve several of them. Timers without tolerance never come here: they have one node, in
/// their mode's exact heap, whose fire order is also its wake order.
///
/// A timer with tolerance `t` and fire date `d` may fire anywhere in `[d, d + t]`. It has
/// two nodes: one in `fire`, keyed by `d`, and one in `wake`, keyed by `d + t` (the end of
/// its window). With `L` the earliest end of a window over the mode (exact timers' windows
/// end at their fire dates), the loop wakes at the latest fire date that is not after `L`:
/// every timer due by then fires inside its window (as long as the wake-up latency is
/// shorter than what is left of it), and timers whose windows overlap share one wake-up.
/// Waking at `L` itself would fire the same timers, each later by the wake-up latency and
/// so after its window.
struct _TolerantTimers {
  /// By fire date: the order they fire in.
  var fire: _TimerHeap
  /// By the end of the tolerance window: when the loop must wake at the latest.
  var wake: _TimerHeap

  init(mode: Int) {
    fire = _TimerHeap(order: .fire, mode: mode)
    wake = _TimerHeap(order: .wake, mode: mode)
  }

  var count: Int { fire.count }

  /// The earliest end of a tolerance window.
  var earliestWindowEnd: Int64? { wake.top?.key }

  mutating func insert(_ timer: LoopTimer) {
    fire.insert(timer)
    wake.insert(timer)
  }

  mutating func remove(fireIndex: Int, wakeIndex: Int) {
    if fireIndex >= 0 { fire.remove(at: fireIndex) }
    // Removing from `fire` moves no node of `wake`: the wake position read before holds.
    if wakeIndex >= 0 { wake.remove(at: wakeIndex) }
  }

  mutating func update(fireIndex: Int, wakeIndex: Int) {
    if fireIndex >= 0 { fire.update(at: fireIndex) }
    if wakeIndex >= 0 { wake.update(at: wakeIndex) }
  }

  mutating func releaseAll() {
    fire.releaseAll()
    wake.releaseAll()
  }

  func isConsistent() -> Bool {
    fire.isConsistent() && wake.isConsistent() && fire.count == wake.count
  }
}
