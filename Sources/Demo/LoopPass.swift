import RunLoopTracing

/// One pass of one loop, taken from a trace: its records from step 2 to the end of step 9,
/// with the run's entry (step 1) when the pass is its run's first and the run's exit
/// (step 10) when it is its last, and every record of a run nested in one of its call-outs.
/// `trace pass` draws it (``PassDrawing``).
///
/// A pass is found by the loop's pass counter at its step 2. Its other records are the ones
/// that follow on the same loop until the next pass or run of the same depth begins, or the
/// run that made the pass's run (a call-out one level out) goes on: a nested run counts
/// passes too, so the outer call-out that ran it is written with a later counter.
struct LoopPass {
  /// The pass's records in the order they started (a call-out is written when it ends, so
  /// the one that ran a nested run comes before the nested run's records here).
  let records: [TraceRecord]
  /// The pass counter at step 2.
  let iteration: UInt64
  /// The depth of the pass's run.
  let depth: Int
  let loop: UInt64
  let pid: Int32

  /// The pass `iteration` of `loop` (the first loop in the trace when `nil`); without an
  /// iteration, the first pass that holds a nested run, else the first pass that slept and
  /// then handled what woke it, else the first pass. `nil` when the trace has no such pass.
  static func find(in trace: [TraceRecord], iteration: UInt64?, loop: UInt64?) -> LoopPass? {
    let records = loopRecords(trace, loop: loop)
    let starts = records.indices.filter { records[$0].activity == "beforeTimers" }
    if let iteration {
      guard let start = starts.first(where: { records[$0].iteration == iteration }) else {
        return nil
      }
      return pass(startingAt: start, in: records)
    }
    let passes = starts.map { pass(startingAt: $0, in: records) }
    return passes.first { pass in pass.records.contains { $0.depth > pass.depth } }
      ?? passes.first { pass in
        pass.records.contains { $0.record == .sleep }
          && pass.records.contains { $0.record == .callout && $0.step == 9 }
      } ?? passes.first
  }

  /// The pass counters at step 2 of `loop`'s passes (the first loop's when `nil`), for a
  /// message that names the passes there are.
  static func iterations(in trace: [TraceRecord], loop: UInt64?) -> [UInt64] {
    loopRecords(trace, loop: loop).filter { $0.activity == "beforeTimers" }.map(\.iteration)
  }

  /// The activity, call-out and sleep records of one loop, in the order it wrote them.
  private static func loopRecords(_ trace: [TraceRecord], loop: UInt64?) -> [TraceRecord] {
    let loopRecords = trace.filter { [.activity, .callout, .sleep].contains($0.record) }
    guard let first = loopRecords.first(where: { loop == nil || $0.loop == loop }) else {
      return []
    }
    return
      loopRecords
      .filter { $0.loop == first.loop && $0.pid == first.pid && $0.run == first.run }
      .sorted { $0.seq < $1.seq }
  }

  private static func pass(startingAt start: Int, in records: [TraceRecord]) -> LoopPass {
    let head = records[start]
    var first = start
    // The run's entry and its observers, when this pass is the run's first.
    while first > 0, records[first - 1].depth == head.depth, records[first - 1].step == 1 {
      first -= 1
    }
    var end = start + 1
    while end < records.count {
      let record = records[end]
      if record.depth < head.depth { break }
      if record.depth == head.depth,
        record.activity == "beforeTimers" || record.activity == "entry"
      {
        break
      }
      end += 1
    }
    let ordered = records[first..<end].sorted { ($0.timestamp, $0.seq) < ($1.timestamp, $1.seq) }
    return LoopPass(
      records: ordered, iteration: head.iteration, depth: head.depth, loop: head.loop,
      pid: head.pid)
  }
}
