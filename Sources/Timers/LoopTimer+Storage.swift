/// Where a timer keeps its schedule: the fields every timer has (in ``LoopTimer`` itself),
/// one tagged word, and the `_TimerExtras` that only unusual timers get.
///
/// The tagged word (`LoopTimer.tail`) holds, by its two low bits:
/// - `0`: nothing (a one-shot timer whose fire date is a whole nanosecond);
/// - `x1`: a repeating timer's interval, `nanoseconds << 1 | 1` (whole nanoseconds below
///   2^62);
/// - `10`: a one-shot timer's fire date below the nanosecond, `attoseconds << 2 | 2`: the
///   key is rounded up to the next nanosecond, and the date is `key - 1 ns + attoseconds`.
///   Dates made from seconds as `Double` (`.now + .seconds(0.3)`) are almost never whole
///   nanoseconds, so this keeps such timers at one allocation;
/// - otherwise: the address of the timer's `_TimerExtras`, which then hold the interval and
///   the exact date, and which the word owns one retain of.
///
/// Every member here is called with the schedule guarded (the scheduler's lock, or the
/// attachment word of a timer that belongs to no loop; see ``LoopTimer``), except
/// that the word is published with release ordering so that ``LoopTimer/interval`` can
/// read it without a lock.
extension LoopTimer {
  static let intervalTag: UInt = 0b01
  static let fractionTag: UInt = 0b10
  static let tagMask: UInt = 0b11

  /// The extras in `word`, if it holds their address.
  static func extras(in word: UInt) -> _TimerExtras? {
    guard word & tagMask == 0, let pointer = UnsafeRawPointer(bitPattern: word) else { return nil }
    return Unmanaged<_TimerExtras>.fromOpaque(pointer).takeUnretainedValue()
  }

  /// The timer's extras, if it has them.
  var extras: _TimerExtras? { Self.extras(in: tail.load(ordering: .relaxed)) }

  /// Whether the timer has extras.
  var hasExtras: Bool {
    let word = tail.load(ordering: .relaxed)
    return word & Self.tagMask == 0 && word != 0
  }

  /// The timer's extras, made now if it has none (they then take over the interval or the
  /// date below the nanosecond).
  func ensureExtras() -> _TimerExtras {
    let word = tail.load(ordering: .relaxed)
    if let extras = Self.extras(in: word) { return extras }
    let extras = _TimerExtras(interval: inlineIntervalNanoseconds.map { .nanoseconds($0) })
    if word & Self.tagMask == Self.fractionTag { extras.exactFireOffset = fireOffset }
    tail.store(UInt(bitPattern: Unmanaged.passRetained(extras).toOpaque()), ordering: .releasing)
    return extras
  }

  /// The interval in nanoseconds when the timer's word holds it (no extras).
  var inlineIntervalNanoseconds: Int64? {
    let word = tail.load(ordering: .relaxed)
    return word & Self.intervalTag != 0 ? Int64(word >> 1) : nil
  }

  /// The fire date as an offset from ``_TimerClock/origin``, exactly.
  var fireOffset: Duration {
    get {
      let word = tail.load(ordering: .relaxed)
      if word & Self.tagMask == Self.fractionTag {
        return .nanoseconds(fireKey - 1) + Duration(attoseconds: Int128(word >> 2))
      }
      return Self.extras(in: word)?.exactFireOffset ?? .nanoseconds(fireKey)
    }
    set {
      let (key, fraction) = _TimerClock.keyAndFraction(of: newValue)
      let word = tail.load(ordering: .relaxed)
      switch fraction {
      case .some(0) where word & Self.tagMask == Self.fractionTag:
        tail.store(0, ordering: .releasing)
      case .some(0):
        extras?.exactFireOffset = nil
      case let fraction? where word & Self.intervalTag == 0 && !hasExtras:
        tail.store(fraction << 2 | Self.fractionTag, ordering: .releasing)
      default:
        ensureExtras().exactFireOffset = newValue
      }
      fireKey = key
    }
  }

  /// The next scheduled fire date (the grid point, never the actual firing time).
  var scheduledFireDate: ContinuousClock.Instant {
    get { _TimerClock.instant(at: fireOffset) }
    set { fireOffset = _TimerClock.offset(of: newValue) }
  }

  /// How late the timer may fire; never negative.
  var scheduledTolerance: Duration {
    get { extras?.tolerance ?? .zero }
    set {
      guard newValue != .zero || hasExtras else { return }
      ensureExtras().tolerance = newValue
    }
  }

  /// Time left when suspended; `nil` while running.
  var suspendedRemaining: Duration? {
    get { extras?.suspendedRemaining }
    set {
      guard newValue != nil || hasExtras else { return }
      ensureExtras().suspendedRemaining = newValue
    }
  }

  /// The key of the timer in a heap of `order`: its fire date's, or for the wake order the
  /// end of its tolerance window (rounded down, so the loop never wakes after the window,
  /// and never before the fire date's key).
  func heapKey(_ order: _TimerHeapOrder) -> Int64 {
    guard order == .wake, let extras, extras.tolerance > .zero else { return fireKey }
    let end = _TimerClock.key(of: fireOffset + extras.tolerance, roundingUp: false).key
    return max(fireKey, end)
  }

  // Slots: position 0 is the inline one (in use when `firstMode != noMode`), positions 1...
  // are the extras' `rest`.

  /// One past the last slot position.
  var slotEnd: Int { 1 + (extras?.rest.count ?? 0) }

  /// The slot at `position`, `nil` for an unused inline slot.
  func slot(at position: Int) -> _TimerSlot? {
    guard position == 0 else { return extras?.rest[position - 1] }
    guard firstMode != Self.noMode else { return nil }
    return _TimerSlot(
      mode: Int(firstMode), active: firstFlags & Self.activeFlag != 0,
      fireIndex: Int(firstFireIndex), wakeIndex: Int(extras?.firstWakeIndex ?? -1))
  }

  /// Replaces the slot at `position` (a slot of the same mode key).
  func setSlot(_ slot: _TimerSlot, at position: Int) {
    guard position == 0 else {
      ensureExtras().rest[position - 1] = slot
      return
    }
    firstFireIndex = Int32(slot.fireIndex)
    firstFlags = slot.active ? Self.activeFlag : 0
    // Only a timer with a tolerance, which has extras, has a wake node.
    if slot.wakeIndex >= 0 || hasExtras {
      ensureExtras().firstWakeIndex = Int32(slot.wakeIndex)
    }
  }

  /// The position of the slot for mode key `mode`, if the timer has one.
  func slotPosition(ofMode mode: Int) -> Int? {
    if firstMode != Self.noMode, Int(firstMode) == mode { return 0 }
    guard let rest = extras?.rest else { return nil }
    for index in rest.indices where rest[index].mode == mode { return index + 1 }
    return nil
  }

  /// Adds a slot (for a mode key the timer has none for); returns its position.
  func appendSlot(_ slot: _TimerSlot) -> Int {
    if firstMode == Self.noMode, slot.mode < Int(Self.noMode) {
      firstMode = UInt16(slot.mode)
      setSlot(slot, at: 0)
      return 0
    }
    let extras = ensureExtras()
    extras.rest.append(slot)
    return extras.rest.count
  }

  /// Records the timer's position in the heap of mode key `mode` and `order`. The heaps
  /// call this for every node they move, so the usual case (the inline slot's fire-order
  /// position) is a compare and a store, and the rest goes to a function of its own.
  func setHeapPosition(_ index: Int, mode: Int, order: _TimerHeapOrder) {
    if order == .fire, firstMode != Self.noMode, Int(firstMode) == mode {
      firstFireIndex = Int32(truncatingIfNeeded: index)
    } else {
      setExtraHeapPosition(index, mode: mode, order: order)
    }
  }

  private func setExtraHeapPosition(_ index: Int, mode: Int, order: _TimerHeapOrder) {
    let extras = ensureExtras()
    if firstMode != Self.noMode, Int(firstMode) == mode {
      extras.firstWakeIndex = Int32(truncatingIfNeeded: index)
      return
    }
    let position = extras.rest.firstIndex { $0.mode == mode }!
    switch order {
    case .fire: extras.rest[position].fireIndex = index
    case .wake: extras.rest[position].wakeIndex = index
    }
  }

  /// The timer's position in the heap of mode key `mode` and `order` (for tests).
  func heapPosition(mode: Int, order: _TimerHeapOrder) -> Int? {
    guard let position = slotPosition(ofMode: mode), let slot = slot(at: position) else {
      return nil
    }
    return order == .fire ? slot.fireIndex : slot.wakeIndex
  }
}

/// The rarely used parts of a timer's schedule, in an object of their own that a timer gets
/// only when it first needs one: a tolerance, a suspension, a second mode key, a fire date
/// beyond the `Int64` nanosecond range (or below the nanosecond on a repeating timer), or an
/// interval that does not fit the tagged word. Once made, it stays until the timer is
/// freed, so that later changes (and fires) allocate nothing.
///
/// Guarded like the rest of the schedule (see ``LoopTimer``). `interval` is set when the
/// extras are made and never changes, so it is read without a lock.
final class _TimerExtras {
  /// The interval, when the timer repeats and its word no longer holds it.
  let interval: Duration?
  /// How late the timer may fire; never negative.
  var tolerance: Duration = .zero
  /// Time left when suspended; `nil` while running.
  var suspendedRemaining: Duration?
  /// The fire date's exact offset from ``_TimerClock/origin``, when its key is not exact;
  /// `nil` when the key is exact.
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
struct _TimerSlot {
  /// The mode key's position in the scheduler's table.
  let mode: Int
  /// Whether the timer is (still) in that mode.
  var active: Bool
  /// Position in the fire-order heap (exact, or tolerant fire), -1 when not in it.
  var fireIndex = -1
  /// Position in the tolerant wake-order heap, -1 when not in it.
  var wakeIndex = -1

  /// Whether `fireIndex` is a position in the tolerant timers' fire heap (else in the exact
  /// heap): only a timer linked with a tolerance has a wake node.
  var isTolerant: Bool { wakeIndex >= 0 }
}
