import RunLoopCore
import RunLoopObservers
import Tracing

extension LoopSpans: StallReporter {
  /// Adds the report as an event of the span of the call-out running on the stalled loop:
  /// `runloop.stall` (or `runloop.recovery`) with `runloop.awake_ns`, `runloop.mode` and,
  /// when the watchdog read them, `thread.state` and `thread.wchan`. Returns whether a span
  /// took it (a loop stalled outside any call-out has none).
  ///
  /// ```swift
  /// let watchdog = StallWatchdog(threshold: .milliseconds(100), reportingTo: spans)
  /// watchdog.attachToAllLoops()
  /// ```
  public func report(_ report: StallReport) -> Bool {
    guard let span = running.withLock({ $0[report.loop]?.last }) else { return false }
    var attributes = SpanAttributes()
    attributes["runloop.awake_ns"] = report.awakeFor
    attributes["runloop.mode"] = report.mode
    if let state = report.threadState { attributes["thread.state"] = state }
    if let wchan = report.wchan { attributes["thread.wchan"] = wchan }
    let name = report.kind == .stall ? "runloop.stall" : "runloop.recovery"
    span.addEvent(SpanEvent(name: name, attributes: attributes))
    return true
  }
}
