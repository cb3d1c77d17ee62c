import RunLoopCore

/// The one vocabulary both sides record into: activities by name (`entry`, `beforeTimers`,
/// `beforeSources`, `beforeWaiting`, `afterWaiting`, `exit`), call-outs as `kind:name`
/// (`source:a`, `timer:t`, `observer:o`, `block:b`), run results as `result:timedOut`, and
/// marks a scenario adds. Safe from any thread.
final class ParityTrace: Sendable {
  private let entries = GuardedState<[String]>([])

  func add(_ entry: String) {
    entries.withLock { $0.append(entry) }
  }

  var log: [String] { entries.withLock { $0 } }

  /// The entries from the first one equal to `marker` on (all of them when it is absent).
  func log(from marker: String) -> [String] {
    let all = log
    guard let start = all.firstIndex(of: marker) else { return all }
    return Array(all[start...])
  }
}

/// The six points of the sequence of events, named as both sides' traces name them.
enum ParityActivity: String, CaseIterable, Sendable {
  case entry, beforeTimers, beforeSources, beforeWaiting, afterWaiting, exit

  /// The activity's bit: CFRunLoopActivity and LoopActivity use the same ones.
  var bit: UInt {
    switch self {
    case .entry: 1 << 0
    case .beforeTimers: 1 << 1
    case .beforeSources: 1 << 2
    case .beforeWaiting: 1 << 5
    case .afterWaiting: 1 << 6
    case .exit: 1 << 7
    }
  }

  init(bit: UInt) {
    self = Self.allCases.first { $0.bit == bit } ?? .exit
  }

  /// The bits of `activities`, together.
  static func mask(_ activities: [ParityActivity]) -> UInt {
    activities.reduce(0) { $0 | $1.bit }
  }
}

/// What a run returned, named as both sides' traces name it.
enum ParityResult: String, Sendable {
  case finished, stopped, timedOut, handledSource
}

/// A source, timer or observer of one side, for the scenario that made it.
final class ParityHandle: @unchecked Sendable {
  let name: String
  // Set once by the side that made the handle, before the handle is shared.
  var object: Any?

  init(name: String) {
    self.name = name
  }
}
