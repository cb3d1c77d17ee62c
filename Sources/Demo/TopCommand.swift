import ArgumentParser
import Foundation
import Glibc
import RunLoopObservers

/// `runloop-demo top`: a live view of a running service's loops, read from its JSON log as
/// the log grows.
struct TopCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "top",
    abstract: "Watch a traced service's loops live: state, mode, utilization, delays, stalls.",
    discussion: """
      Reads the service's JSON log as it grows (like tail -f) and redraws a table in place \
      every --interval: per loop its state (asleep, awake, STALLED when awake past \
      --stall-threshold, not running), mode, utilization over the last interval and since \
      the start, passes per second, call-out delay p50/p99/max and the call-outs that ran \
      past the threshold. Ctrl-C ends it.

        runloop-demo run --json-log /tmp/svc.jsonl &
        runloop-demo top /tmp/svc.jsonl
      """)

  @Argument(help: ArgumentHelp("The JSON log of the running service.", valueName: "file"))
  var file: String

  @Option(
    name: .long, parsing: .unconditional,
    help: ArgumentHelp("How often to redraw.", valueName: "duration"))
  var interval: DurationArgument = DurationArgument(.seconds(1))

  @Option(
    name: .customLong("stall-threshold"),
    help: ArgumentHelp(
      "Call-outs this long, and loops awake this long, are stalls.", valueName: "duration"))
  var stallThreshold: DurationArgument = DurationArgument(.milliseconds(100))

  // Unconditional: "-1" is read as the (invalid) value, not as a missing one.
  @Option(
    name: .long, parsing: .unconditional,
    help: ArgumentHelp("Stop after this long (default: until Ctrl-C).", valueName: "duration"))
  var duration: DurationArgument?

  @Flag(name: .long, help: "Read what the log holds now, print one table and exit.")
  var once = false

  func run() throws {
    ForegroundSignals.restoreDefault()
    // Live, a log not there yet is waited for (the service may start after top); once, an
    // unreadable path is a mistake, not an empty table.
    if once, access(file, R_OK) != 0 {
      throw DemoError("cannot read '\(file)': \(String(cString: strerror(errno)))")
    }
    var tail = LogTail(path: file)
    var board = TopBoard(stallThreshold: Int64(stallThreshold.seconds * 1e9))
    let window = Int64(max(interval.seconds, 0.2) * 1e9)
    let end = duration.map { ContinuousClock.now + $0.duration }
    var frame = 0
    while true {
      // Live, a large backlog is read from its last part first and in slices, a frame
      // drawn and the clock checked between them; once, the whole log is the answer.
      let more =
        once
        ? try tail.readNewRecords { board.add($0) }
        : try tail.readNewRecords(upTo: Self.sliceBytes, tail: Self.tailBytes) { board.add($0) }
      frame += 1
      let table = Self.render(
        board, file: file, frame: frame, now: Self.bootNow(), window: window,
        badLines: tail.badLines, skippedBytes: tail.skippedBytes)
      if once {
        // A file of bad lines only is not a log with nothing in it yet: as the trace tools
        // do, say so and fail.
        if board.records == 0, let note = tail.badLineNote {
          throw DemoError("'\(file)' is not a runloop JSON log: \(note)")
        }
        StandardStreams.write(1, table)
        if let note = tail.badLineNote { StandardStreams.error("runloop-demo: '\(file)': \(note)") }
        return
      }
      // Home, the table with each line cleared to its end, then clear what is below.
      let redraw =
        "\u{1B}[H"
        + table.split(separator: "\n", omittingEmptySubsequences: false)
        .joined(separator: "\u{1B}[K\n") + "\u{1B}[J"
      StandardStreams.write(1, frame == 1 ? "\u{1B}[2J" + redraw : redraw)
      if let end, ContinuousClock.now >= end { return }
      if !more { Thread.sleep(forTimeInterval: interval.seconds) }
    }
  }

  /// How much of a live log's backlog is read at all (its last part), and how much between
  /// two frames.
  static let tailBytes = 16 << 20
  static let sliceBytes = 4 << 20

  /// `CLOCK_BOOTTIME` now, the clock of the records' `ts_ns`.
  static func bootNow() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_BOOTTIME, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
  }

  static func render(
    _ board: TopBoard, file: String, frame: Int, now: Int64, window: Int64, badLines: Int = 0,
    skippedBytes: Int = 0
  ) -> String {
    let runs = board.runs.sorted().joined(separator: ",") + (board.moreRuns ? " and more" : "")
    // Lines that were not records are skipped, as the trace tools skip them, and counted.
    var skipped = badLines > 0 ? "  \(badLines) bad line\(badLines == 1 ? "" : "s") skipped" : ""
    if skippedBytes > 0 {
      skipped += "  from the last \(tailBytes >> 20) MB (\(skippedBytes >> 20) MB before)"
    }
    var lines = [
      "runloop-demo top  \(file)  run \(runs.isEmpty ? "-" : runs)  \(board.records) records  "
        + "frame \(frame)\(skipped)",
      "",
    ]
    let header: [String] = [
      "LOOP", "THREAD", "STATE", "MODE", "UTIL", "UTIL ALL", "PASS/S", "DELAY p50/p99/max ms",
      "STALLS", "LAST STALL",
    ]
    var rows: [[String]] = [header]
    for loop in board.loops.values.sorted(by: { $0.loop < $1.loop }) {
      let recent = board.recentUtilization(of: loop, now: now, window: window)
      let delays = board.delayPercentiles(of: loop).map { "\($0.p50)/\($0.p99)/\($0.max)" }
      rows.append([
        String(loop.loop), loop.thread, board.state(of: loop, now: now), loop.mode,
        recent.map(percent) ?? "-", percent(board.totalUtilization(of: loop, now: now)),
        "\((board.passRate(of: loop, now: now, window: window) * 10).rounded() / 10)",
        delays ?? "-", String(loop.stalls), loop.lastStall ?? "-",
      ])
    }
    if board.loops.isEmpty { rows.append(["(no records yet)"]) }
    let widths = header.indices.map { column in
      rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0
    }
    for row in rows {
      lines.append(
        row.enumerated().map { column, cell in
          column == row.count - 1 ? cell : cell.padding(toLength: widths[column])
        }.joined(separator: "  "))
    }
    return lines.joined(separator: "\n") + "\n"
  }

  static func percent(_ fraction: Double) -> String {
    "\((fraction * 1000).rounded() / 10)%"
  }
}
