import Foundation
import RunLoopCore

/// Converts a trace into Chrome Trace Event JSON, which Perfetto (ui.perfetto.dev) and
/// `chrome://tracing` open.
///
/// Each run of a loop becomes a begin/end pair (`B`/`E`, named `run <mode>`), each sleep and
/// call-out a complete event (`X`, with its duration), the other activities instant events
/// (`i`), a stall an instant event where the watchdog saw it and its recovery a complete
/// event `stalled` over the time the loop was awake, and each thread's name a metadata event
/// (`M`, `thread_name`). Timestamps are
/// microseconds on the trace's monotonic clock. A run still open at the end of the trace is
/// closed at the last timestamp, and an exit whose entry happened before tracing began is
/// left out, so begin and end events always balance.
///
/// ```swift
/// let records = try TraceLog.read(contentsOf: "/tmp/loop.jsonl")
/// try ChromeTrace.json(from: records).write(to: URL(fileURLWithPath: "/tmp/loop.trace.json"))
/// ```
public enum ChromeTrace {
  /// The Chrome Trace Event objects for `records`, in timestamp order per thread.
  ///
  /// ```swift
  /// let events = ChromeTrace.events(from: records)
  /// ```
  public static func events(from records: [TraceRecord]) -> [[String: any Sendable]] {
    var events: [[String: any Sendable]] = []
    var named = Set<Int32>()
    var open: [Int32: [TraceRecord]] = [:]
    var lastTimestamp: [Int32: Int64] = [:]
    for record in records {
      let pid = Int(record.pid)
      let tid = Int(record.tid)
      if named.insert(record.tid).inserted {
        events.append([
          "ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
          "args": ["name": "\(record.thread) (loop \(record.loop))"] as [String: any Sendable],
        ])
      }
      lastTimestamp[record.tid] = max(lastTimestamp[record.tid] ?? 0, record.endTimestamp)
      let base: [String: any Sendable] = [
        "pid": pid, "tid": tid, "ts": microseconds(record.timestamp),
      ]
      var args: [String: any Sendable] = [
        "loop": Int(clamping: record.loop), "mode": record.mode,
        "iteration": Int(clamping: record.iteration),
        "depth": record.depth, "seq": Int(clamping: record.seq),
      ]
      switch record.record {
      case .activity where record.activity == "entry":
        open[record.tid, default: []].append(record)
        events.append(
          base.merging(["ph": "B", "name": "run \(record.mode)", "cat": "run", "args": args]) {
            $1
          })
      case .activity where record.activity == "exit":
        guard open[record.tid]?.popLast() != nil else { continue }
        events.append(base.merging(["ph": "E", "cat": "run", "args": args]) { $1 })
      case .activity:
        events.append(
          base.merging([
            "ph": "i", "s": "t", "name": record.activity ?? "activity", "cat": "activity",
            "args": args,
          ]) { $1 })
      case .callout:
        if let lateness = record.lateness { args["lateness_us"] = microseconds(lateness) }
        events.append(
          base.merging([
            "ph": "X", "name": "\(record.calloutKind ?? "callout"): \(record.calloutName ?? "")",
            "cat": "callout", "dur": microseconds(record.duration ?? 0), "args": args,
          ]) { $1 })
      case .sleep:
        events.append(
          base.merging([
            "ph": "X", "name": "sleep", "cat": "sleep",
            "dur": microseconds(record.duration ?? 0), "args": args,
          ]) { $1 })
      case .stall:
        // At the moment the watchdog saw it, naming the call-out the loop was in.
        if let state = record.threadState { args["thread_state"] = state }
        if let wchan = record.wchan { args["wchan"] = wchan }
        args["awake_ms"] = microseconds(record.duration ?? 0) / 1000
        events.append([
          "ph": "i", "s": "t", "pid": pid, "tid": tid,
          "ts": microseconds(record.endTimestamp), "cat": "stall",
          "name": "stall: \(record.calloutKind ?? "-") \(record.calloutName ?? "")",
          "args": args,
        ])
      case .recovery:
        // The whole time the loop was awake, from waking to sleeping again.
        events.append(
          base.merging([
            "ph": "X", "name": "stalled", "cat": "stall",
            "dur": microseconds(record.duration ?? 0), "args": args,
          ]) { $1 })
      }
    }
    // Close runs the trace ended inside of.
    for (tid, stack) in open {
      for record in stack.reversed() {
        events.append([
          "ph": "E", "cat": "run", "pid": Int(record.pid), "tid": Int(tid),
          "ts": microseconds(lastTimestamp[tid] ?? record.timestamp),
        ])
      }
    }
    return events
  }

  /// The whole Chrome Trace Event JSON document (`{"traceEvents": [...]}`).
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` if serialisation fails
  ///   (it does not for records read by ``TraceLog``).
  ///
  /// ```swift
  /// let data = try ChromeTrace.json(from: records)
  /// ```
  public static func json(from records: [TraceRecord]) throws(RunLoopError) -> Data {
    let document: [String: Any] = [
      "traceEvents": events(from: records), "displayTimeUnit": "ms",
    ]
    do {
      return try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
    } catch {
      throw .invalidArgument("cannot serialise the Chrome trace: \(error)")
    }
  }

  static func microseconds(_ nanoseconds: Int64) -> Double {
    Double(nanoseconds) / 1000
  }
}
