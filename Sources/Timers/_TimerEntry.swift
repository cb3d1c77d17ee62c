/// A timer's schedule: what the scheduler orders it by, and where it sits in each heap.
///
/// Stored inline in its ``LoopTimer`` (one object per timer, so that the heaps' position
/// write-backs touch one cache line of the timer, not a chain of objects).
///
/// Locking: before the timer joins a loop, the timer's `link` lock guards the entry; from
/// then on every access also holds the loop's scheduler lock (the timer's own methods take
/// `link` then the scheduler lock; the loop's firing path takes only the scheduler lock).
struct _TimerEntry {
  /// The next scheduled fire date (the grid point, never the actual firing time), as an
  /// offset from ``_TimerClock/origin`` (see there why).
  var fireOffset: Duration
  /// How late the timer may fire; never negative.
  var tolerance: Duration
  /// Insertion sequence: breaks ties of equal deadlines so that they fire in the order they
  /// were scheduled. Renewed whenever the fire date changes.
  var sequence: UInt64 = 0
  /// Time left when suspended; `nil` while running.
  var suspendedRemaining: Duration?
  /// One slot per mode key the timer was added to (slots are never removed, only
  /// deactivated, so heap nodes can refer to them by position).
  var slots = _TimerSlots()

  init(fireDate: ContinuousClock.Instant, tolerance: Duration) {
    self.fireOffset = _TimerClock.offset(of: fireDate)
    self.tolerance = tolerance
  }

  /// The next scheduled fire date (the grid point, never the actual firing time).
  var fireDate: ContinuousClock.Instant {
    get { _TimerClock.instant(at: fireOffset) }
    set { fireOffset = _TimerClock.offset(of: newValue) }
  }

  /// The latest instant the timer may fire: the end of its tolerance window.
  var latest: ContinuousClock.Instant { fireDate + tolerance }

  /// The first grid point (`fireDate + k * interval`, k >= 1) strictly after `now`. Skipping
  /// the missed grid points is what makes an overrun cost one late fire, not a burst.
  ///
  /// Constant time however far in the past the fire date is: with `gap = now - fireDate`,
  /// the next grid point is `now + (interval - gap % interval)`, computed exactly on the
  /// 128-bit attosecond counts (`Duration` itself has no `%`).
  func nextGridPoint(after now: ContinuousClock.Instant, interval: Duration)
    -> ContinuousClock.Instant
  {
    guard now >= fireDate else { return fireDate + interval }
    let step = interval.attoseconds
    let remainder = (now - fireDate).attoseconds % step
    return now + Duration(attoseconds: step - remainder)
  }
}

/// A timer's membership in one mode key of one loop (a concrete mode or `.common`).
/// Positions are stored as `Int32` (16 bytes a slot instead of 32; a heap never holds 2^31
/// timers).
struct _TimerSlot {
  private let storedHeapIndex: Int32
  private var storedFireIndex: Int32 = -1
  private var storedWakeIndex: Int32 = -1
  /// Whether the timer is (still) in that mode.
  var active: Bool
  /// Whether `fireIndex` is a position in the tolerant timers' fire heap (else in the
  /// exact timers' heap): the tolerance the timer had when it was linked.
  var tolerant = false

  init(heapIndex: Int, active: Bool) {
    self.storedHeapIndex = Int32(heapIndex)
    self.active = active
  }

  /// Position of the mode key's heaps in the scheduler's table.
  var heapIndex: Int { Int(storedHeapIndex) }
  /// Position in the fire-order heap, -1 when not in it.
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

/// A timer's slots: the first one inline (most timers are in one mode key, and then need no
/// array allocation), any others in an array.
struct _TimerSlots: RandomAccessCollection, MutableCollection {
  private var first = _TimerSlot(heapIndex: -1, active: false)
  private var rest: [_TimerSlot] = []

  var startIndex: Int { 0 }
  var endIndex: Int { first.heapIndex < 0 ? 0 : 1 + rest.count }

  subscript(position: Int) -> _TimerSlot {
    get { position == 0 ? first : rest[position - 1] }
    set {
      if position == 0 { first = newValue } else { rest[position - 1] = newValue }
    }
  }

  /// The position of the slot for the mode key at `heapIndex` in the scheduler's table (a
  /// timer has one slot per key; the caller knows it exists).
  func index(ofHeap heapIndex: Int) -> Int {
    if first.heapIndex == heapIndex { return 0 }
    return 1 + rest.firstIndex { $0.heapIndex == heapIndex }!
  }

  mutating func append(_ slot: _TimerSlot) {
    if first.heapIndex < 0 { first = slot } else { rest.append(slot) }
  }
}

/// The origin timer keys count from. `ContinuousClock.Instant` is a resilient type of the
/// concurrency library: a struct holding one has no layout known at compile time, so every
/// copy, comparison and field access of a heap node or timer entry would go through value
/// witnesses and metadata (the profile of the churn benchmark showed exactly that).
/// `Duration` is frozen; offsets from a fixed instant are exact (both are attosecond counts)
/// and compare as the instants do.
enum _TimerClock {
  /// Any fixed instant; the process's first use of the timers.
  static let origin = ContinuousClock.now

  static func offset(of instant: ContinuousClock.Instant) -> Duration {
    origin.duration(to: instant)
  }

  static func instant(at offset: Duration) -> ContinuousClock.Instant {
    origin.advanced(by: offset)
  }
}
