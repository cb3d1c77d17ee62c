/// The six points of a run loop's sequence of events at which observers are told what the
/// loop is about to do (CoreFoundation's `CFRunLoopActivity`).
///
/// It is an option set so that an observer can ask for any combination:
///
/// ```swift
/// let interesting: LoopActivity = [.beforeWaiting, .afterWaiting]
/// ```
public struct LoopActivity: OptionSet, Hashable, Sendable, CustomStringConvertible {
  /// The bits of the set.
  ///
  /// ```swift
  /// LoopActivity.beforeWaiting.rawValue  // 32
  /// ```
  public let rawValue: UInt32

  /// Creates a set from its bits.
  ///
  /// ```swift
  /// let activity = LoopActivity(rawValue: 1 << 5)  // .beforeWaiting
  /// ```
  public init(rawValue: UInt32) {
    self.rawValue = rawValue
  }

  /// The loop was entered (step 1 of the sequence of events).
  ///
  /// ```swift
  /// if activity == .entry { print("a run began in", info.mode) }
  /// ```
  public static let entry = LoopActivity(rawValue: 1 << 0)
  /// The loop is about to process timers (step 2).
  ///
  /// ```swift
  /// if activity == .beforeTimers { print("pass", info.iteration, "checks its timers") }
  /// ```
  public static let beforeTimers = LoopActivity(rawValue: 1 << 1)
  /// The loop is about to process custom input sources (step 3).
  ///
  /// ```swift
  /// if activity == .beforeSources { print("pass", info.iteration, "checks its sources") }
  /// ```
  public static let beforeSources = LoopActivity(rawValue: 1 << 2)
  /// The loop is about to sleep (step 6).
  ///
  /// ```swift
  /// if activity == .beforeWaiting { flushPendingDrawing() }
  /// ```
  public static let beforeWaiting = LoopActivity(rawValue: 1 << 5)
  /// The loop has woken up, before it handles what woke it (step 8).
  ///
  /// ```swift
  /// if activity == .afterWaiting { wakeUps += 1 }
  /// ```
  public static let afterWaiting = LoopActivity(rawValue: 1 << 6)
  /// The loop exited (step 10).
  ///
  /// ```swift
  /// if activity == .exit { print("the run in", info.mode, "returned") }
  /// ```
  public static let exit = LoopActivity(rawValue: 1 << 7)
  /// All six activities.
  ///
  /// ```swift
  /// LoopActivity.allActivities.contains(.exit)  // true
  /// ```
  public static let allActivities: LoopActivity = [
    .entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit,
  ]

  /// The six single activities in the order the sequence of events reaches them (the JSON
  /// encoder's table of names).
  package static let sequence: [LoopActivity] = [
    .entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit,
  ]

  /// The step of the guide's sequence of events at which the loop reports this activity: 1
  /// for `entry`, 2, 3, 6 and 8 for the four in the passes, 10 for `exit`; 0 for a
  /// combination.
  ///
  /// ```swift
  /// LoopActivity.afterWaiting.step  // 8
  /// ```
  public var step: Int {
    switch self {
    case .entry: 1
    case .beforeTimers: 2
    case .beforeSources: 3
    case .beforeWaiting: 6
    case .afterWaiting: 8
    case .exit: 10
    default: 0
    }
  }

  /// The activity's name as traces spell it (`entry`, `beforeTimers`, ...), or the names of
  /// the members joined with `|` for a combination.
  ///
  /// ```swift
  /// LoopActivity.beforeWaiting.name  // "beforeWaiting"
  /// ```
  public var name: String {
    let names = Self.sequence.compactMap { member -> String? in
      guard contains(member) else { return nil }
      switch member {
      case .entry: return "entry"
      case .beforeTimers: return "beforeTimers"
      case .beforeSources: return "beforeSources"
      case .beforeWaiting: return "beforeWaiting"
      case .afterWaiting: return "afterWaiting"
      default: return "exit"
      }
    }
    return names.isEmpty ? "none" : names.joined(separator: "|")
  }

  /// The same as ``name``.
  ///
  /// ```swift
  /// "\(LoopActivity([.entry, .exit]))"  // "entry|exit"
  /// ```
  public var description: String { name }
}
