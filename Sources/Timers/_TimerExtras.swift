/// The rarely used parts of a timer's schedule, in an object of their own that a timer gets
/// only when it first needs one: a tolerance, a suspension, a second mode key, a fire date
/// that is not a whole number of nanoseconds from ``_TimerClock/origin`` (or is out of the
/// `Int64` range), or an interval that does not fit the timer's tagged word (see
/// `LoopTimer.tail`). Most timers never need it, and then cost one object of 88 bytes and
/// one 16-byte heap node. Once made, it stays until the timer is freed, so that later
/// changes (and fires) allocate nothing.
///
/// Guarded like the rest of the schedule (see ``LoopTimer``): by the timer's stripe lock
/// before the timer joins a loop, by the loop's scheduler lock after. `interval` is set at
/// creation and never changes, so it is read without a lock.
final class _TimerExtras {
  /// The interval, when the timer repeats and its word no longer holds it.
  let interval: Duration?
  /// How late the timer may fire; never negative.
  var tolerance: Duration = .zero
  /// Time left when suspended; `nil` while running.
  var suspendedRemaining: Duration?
  /// The fire date's exact offset from ``_TimerClock/origin``, when its key (whole
  /// nanoseconds, rounded up, saturated) is not exact; `nil` when the key is exact.
  var exactFireOffset: Duration?
  /// Position of the wake node of the timer's inline slot, -1 when it has none.
  var firstWakeIndex: Int32 = -1
  /// The timer's slots after its inline one (a timer in several mode keys).
  var rest: [_TimerSlot] = []

  init(interval: Duration?) {
    self.interval = interval
  }
}

/// A timer's membership in one mode key of one loop (a concrete mode or `.common`).
/// Positions are stored as `Int32` (a heap never holds 2^31 timers).
struct _TimerSlot {
  private let storedHeapIndex: Int32
  private var storedFireIndex: Int32
  private var storedWakeIndex: Int32
  /// Whether the timer is (still) in that mode.
  var active: Bool
  /// Whether `fireIndex` is a position in the tolerant timers' fire heap (else in the
  /// exact timers' heap): the tolerance the timer had when it was linked.
  var tolerant: Bool

  init(
    heapIndex: Int, active: Bool, fireIndex: Int = -1, wakeIndex: Int = -1,
    tolerant: Bool = false
  ) {
    self.storedHeapIndex = Int32(heapIndex)
    self.storedFireIndex = Int32(fireIndex)
    self.storedWakeIndex = Int32(wakeIndex)
    self.active = active
    self.tolerant = tolerant
  }

  /// Position of the mode key's heaps in the scheduler's table.
  var heapIndex: Int { Int(storedHeapIndex) }
  /// Position in the fire-order heap (exact or fire), -1 when not in it.
  var fireIndex: Int {
    get { Int(storedFireIndex) }
    set { storedFireIndex = Int32(newValue) }
  }
  /// Position in the wake-order heap, -1 when not in it.
  var wakeIndex: Int {
    get { Int(storedWakeIndex) }
    set { storedWakeIndex = Int32(newValue) }
  }
}
