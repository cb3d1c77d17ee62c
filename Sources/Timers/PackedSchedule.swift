import RunLoopCore

/// A timer's ``TimerSchedule`` (and its suspension) in 16 bytes: the one place of the module
/// that packs bits. It exists for the memory per timer: a ``LoopTimer`` is 88 bytes (a
/// 96-byte block of malloc's) with this, and the schedule as plain fields (three `Duration`s)
/// would make it 128, a 144-byte block.
///
/// It holds the date's key and one tagged word, which by its two low bits is:
/// - `0`: nothing more (a one-shot timer whose date is a whole nanosecond);
/// - `x1`: a repeating timer's interval, `nanoseconds << 1 | 1` (whole nanoseconds below
///   2^62), its date a whole nanosecond;
/// - `10`: a one-shot timer's date below the nanosecond, `attoseconds << 2 | 2`: the key is
///   rounded up, and the date is `key - 1 ns + attoseconds`. Dates made from seconds as
///   `Double` (`.now + .seconds(0.3)`) are almost never whole nanoseconds;
/// - otherwise: the address of a `TimerExtras`, which the word owns one retain of, for what
///   few timers need: a tolerance, a suspension, an exact date of a repeating timer, an
///   interval or date that does not fit. Once made, the extras stay until the timer is
///   freed, so later changes allocate nothing.
///
/// Guarded by whatever guards the timer's schedule (see ``LoopTimer``).
struct PackedSchedule {
  /// The date's key (``TimerSchedule/key``): what the heaps order by.
  private(set) var key: Int64
  private var word: UInt

  private static let intervalTag: UInt = 0b01
  private static let fractionTag: UInt = 0b10
  private static let tagMask: UInt = 0b11

  init(_ schedule: TimerSchedule) {
    key = 0
    word = 0
    self.schedule = schedule
  }

  /// Gives back the extras' retain (from the timer's `deinit`).
  func release() {
    if let pointer = extrasPointer { Unmanaged<TimerExtras>.fromOpaque(pointer).release() }
  }

  var schedule: TimerSchedule {
    get {
      if let extras {
        return TimerSchedule(
          date: extras.exactDate ?? .nanoseconds(key), interval: extras.interval,
          tolerance: extras.tolerance)
      }
      switch word & Self.tagMask {
      case Self.fractionTag:
        let date = Duration.nanoseconds(key - 1) + Duration(attoseconds: Int128(word >> 2))
        return TimerSchedule(date: date, interval: nil, tolerance: .zero)
      case 0:
        return TimerSchedule(date: .nanoseconds(key), interval: nil, tolerance: .zero)
      default:
        let interval = Duration.nanoseconds(Int64(word >> 1))
        return TimerSchedule(date: .nanoseconds(key), interval: interval, tolerance: .zero)
      }
    }
    set {
      let (key, fraction) = TimerClock.keyAndFraction(of: newValue.date)
      self.key = key
      // `attoseconds` compiles to integer compares; `Duration`'s own `==` is a library call.
      if extras == nil, newValue.tolerance.attoseconds == 0, let fraction {
        if newValue.interval == nil {
          word = fraction == 0 ? 0 : fraction << 2 | Self.fractionTag
          return
        }
        if fraction == 0, let nanoseconds = TimerClock.smallNanoseconds(newValue.interval!) {
          word = UInt(nanoseconds) << 1 | Self.intervalTag
          return
        }
      }
      let extras = ensureExtras(interval: newValue.interval)
      extras.tolerance = newValue.tolerance
      extras.exactDate = fraction == 0 ? nil : newValue.date
    }
  }

  /// The key of the end of the window (``TimerSchedule/latestKey``).
  var latestKey: Int64 {
    guard let extras, extras.tolerance.attoseconds > 0 else { return key }
    return schedule.latestKey
  }

  /// Whether the timer has a tolerance (and so a window wider than its date).
  var hasTolerance: Bool {
    guard let extras else { return false }
    return extras.tolerance.attoseconds > 0
  }

  /// The repeat interval, `nil` for a one-shot timer.
  var interval: Duration? {
    if word & Self.intervalTag != 0 { return .nanoseconds(Int64(word >> 1)) }
    return extras?.interval
  }

  /// Time left when suspended; `nil` while running.
  var suspendedRemaining: Duration? {
    get { extras?.suspendedRemaining }
    set {
      guard newValue != nil || extras != nil else { return }
      let interval = interval
      ensureExtras(interval: interval).suspendedRemaining = newValue
    }
  }

  /// Moves a repeating timer's date to its next grid point after `now` (a key): integer
  /// arithmetic when the word holds the interval, else on the schedule value.
  mutating func advance(after now: Int64) {
    if word & Self.intervalTag != 0,
      let next = TimerClock.nextGridKey(from: key, after: now, interval: Int64(word >> 1))
    {
      key = next
      return
    }
    var schedule = schedule
    schedule.advance(after: now)
    self.schedule = schedule
  }

  /// The cause of the timer's firings and the contexts they run in: the code that created
  /// it, while some instrument captures contexts (see `CalloutCause.captureIfContexts()`);
  /// kept in the extras, as few timers have one.
  var cause: (cause: CalloutCause, contexts: CapturedContexts)? {
    get { extras?.cause }
    set {
      guard newValue != nil || extras != nil else { return }
      ensureExtras(interval: interval).cause = newValue
    }
  }

  /// Whether the timer has extras (for tests of the layout).
  var hasExtras: Bool { extrasPointer != nil }

  private var extrasPointer: UnsafeRawPointer? {
    word & Self.tagMask == 0 ? UnsafeRawPointer(bitPattern: word) : nil
  }

  private var extras: TimerExtras? {
    extrasPointer.map { Unmanaged<TimerExtras>.fromOpaque($0).takeUnretainedValue() }
  }

  /// The extras, made now if there are none: they then take over the date below the
  /// nanosecond that the word held (`key` stays as it is).
  private mutating func ensureExtras(interval: Duration?) -> TimerExtras {
    if let extras { return extras }
    let extras = TimerExtras(interval: interval)
    if word & Self.tagMask == Self.fractionTag { extras.exactDate = schedule.date }
    word = UInt(bitPattern: Unmanaged.passRetained(extras).toOpaque())
    return extras
  }
}

/// The rarely used parts of a timer's schedule (see ``PackedSchedule``).
final class TimerExtras {
  let interval: Duration?
  var tolerance: Duration = .zero
  var suspendedRemaining: Duration?
  /// What created the timer, when an instrument captured its context (``cause``).
  var cause: (cause: CalloutCause, contexts: CapturedContexts)?
  /// The exact date when the key is not (below the nanosecond, or saturated); else `nil`.
  var exactDate: Duration?

  init(interval: Duration?) {
    self.interval = interval
  }
}
