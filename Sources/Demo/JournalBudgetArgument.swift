import ArgumentParser
import RunLoopJournal

/// `--journal-rate-limit`: journald's per-service budget as the service's journald is
/// configured (`RateLimitBurst=` entries per `RateLimitIntervalSec=`), written
/// `BURST/INTERVAL` (`10000/30s`), or `none` when journald's limit is off.
///
/// journald counts every loop's entries against one budget, the service's, so the budget is
/// shared out among the loops' sinks (``share(among:)``): sinks that each took the whole
/// budget would together send past it, and journald would drop the rest without telling
/// anyone.
struct JournalBudgetArgument: ExpressibleByArgument, Sendable, CustomStringConvertible {
  /// The service's budget; `nil` for no limit.
  let limit: JournalSink.RateLimit?

  init(_ limit: JournalSink.RateLimit?) {
    self.limit = limit
  }

  init?(argument: String) {
    if argument == "none" {
      limit = nil
      return
    }
    let parts = argument.split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 2, parts[0].allSatisfy(\.isASCII), let burst = Int(parts[0]),
      burst >= 1, let interval = DurationArgument(argument: String(parts[1]))
    else { return nil }
    limit = .init(burst: burst, interval: interval.duration)
  }

  var description: String {
    guard let limit else { return "none" }
    return "\(limit.burst)/\(DurationArgument(limit.interval))"
  }

  static var defaultCompletionKind: CompletionKind { .default }

  /// One loop's sink's limit when `loops` loops share the budget: an equal part of the burst
  /// over the same interval (at least 2 entries, the smallest bucket that refills).
  func share(among loops: Int) -> JournalSink.RateLimit? {
    guard let limit else { return nil }
    return .init(burst: max(2, limit.burst / max(1, loops)), interval: limit.interval)
  }
}
