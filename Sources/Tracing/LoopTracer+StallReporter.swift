import Glibc
import RunLoopObservers

extension LoopTracer: StallReporter {
  /// Writes a `StallWatchdog` report to every sink as a `stall` or `recovery` record,
  /// numbered in this tracer's run. Returns `false` once the tracer is closed.
  public func report(_ report: StallReport) -> Bool {
    let thread = threadName(report.tid)
    return emitWhole { seq in
      TraceRecord(
        run: runID, seq: seq, record: report.kind == .stall ? .stall : .recovery,
        timestamp: report.awakeSince, wallTime: TraceClock.wallNow(), pid: getpid(),
        tid: report.tid, thread: thread, loop: report.loop, mode: report.mode,
        iteration: report.iteration, depth: report.depth, calloutKind: report.calloutKind,
        calloutName: report.calloutName, duration: report.awakeFor,
        threadState: report.threadState, wchan: report.wchan)
    }
  }
}
