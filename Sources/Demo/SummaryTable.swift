import RunLoopObservers

/// The table the service prints at the end: one row per loop.
enum SummaryTable {
  struct Row {
    let loop: UInt64
    let thread: String
    let snapshot: LoopMetricsSnapshot?
    let journalDrops: String
  }

  static func render(_ rows: [Row]) -> String {
    let header = [
      "loop", "thread", "iterations", "asleep", "call-outs", "timer lateness p50/p99/max",
      "polls caught/made", "journald drops",
    ]
    var table: [[String]] = [header]
    for row in rows {
      guard let snapshot = row.snapshot else {
        table.append(["\(row.loop)", row.thread, "-", "-", "-", "-", "-", row.journalDrops])
        continue
      }
      let callouts = snapshot.callouts.values.reduce(UInt64(0)) { $0 + $1.count }
      let lateness = snapshot.timerLateness
      let latenessText =
        lateness.count == 0
        ? "no timers"
        : "\(milliseconds(nanoseconds: lateness.p50)) / \(milliseconds(nanoseconds: lateness.p99)) / "
          + "\(milliseconds(nanoseconds: lateness.max)) ms"
      let asleep = (snapshot.asleepFraction * 1000).rounded() / 10
      table.append([
        "\(row.loop)", row.thread, "\(snapshot.iterations)", "\(asleep)%", "\(callouts)",
        latenessText, "\(snapshot.spins.caught)/\(snapshot.spins.spins)", row.journalDrops,
      ])
    }
    var widths = [Int](repeating: 0, count: header.count)
    for line in table {
      for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) }
    }
    return table.map { line in
      line.enumerated().map { index, cell in
        index < 2
          ? cell.padding(toLength: widths[index]) : cell.leftPadded(to: widths[index], with: " ")
      }.joined(separator: "  ")
    }.joined(separator: "\n")
  }
}
