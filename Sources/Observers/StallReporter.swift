/// Where a ``StallWatchdog`` sends its reports. The `LoopTracer` of RunLoopTracing is one:
/// it writes them to its sinks (the JSON log, journald) as `stall` and `recovery` records.
///
/// Called on the watchdog's own thread (stalls) or on the loop's thread (recoveries), never
/// under a lock of the watchdog's.
public protocol StallReporter: AnyObject, Sendable {
  /// Takes one report; returns whether it was accepted (`false` once the reporter is
  /// closed), which the watchdog counts in ``StallWatchdog/reports``.
  func report(_ report: StallReport) -> Bool
}
