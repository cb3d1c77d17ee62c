import RunLoopCore

/// Where a narrated line happened in the guide's "The Run Loop Sequence of Events": one of its
/// ten steps, or outside any pass (set-up, or a thread between two runs). Scenarios print it
/// beside each event so that a reader sees which step did what.
///
/// Where this loop runs what, by step (Docs/RunLoopGuide.docc/SequenceOfEvents.md):
/// 1 entry; 2 timers announced; 3 sources announced, then perform requests; 4 custom sources
/// (then perform requests again if one ran); 5 a ready port skips the sleep; 6 about to sleep;
/// 7 asleep; 8 woke; 9 what woke it: timers, descriptors and ports, then perform requests;
/// 10 exit.
enum SequenceStep: Equatable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
  case step(Int)
  case outside

  init(integerLiteral value: Int) { self = .step(value) }

  /// The step at which observers hear of `activity`.
  init(_ activity: LoopActivity) {
    self = .step(activity.step)
  }

  var description: String {
    switch self {
    case .step(let number): "step \(number)"
    case .outside: "no pass"
    }
  }

  /// The line that explains the step column, printed once before the scenarios.
  static let legend =
    "step N: the guide's sequence of events; 1 entry, 2 timers announced, 3 sources announced"
    + " (then perform requests), 4 custom sources fire, 5 a ready port skips the sleep,"
    + " 6 about to sleep, 7 asleep, 8 woke, 9 handle what woke it (timers, ports, then perform"
    + " requests), 10 exit"
}
