import RunLoopTracing

/// Draws one ``LoopPass`` as the guide's sequence of events (`trace pass`): the ten steps are
/// lanes across the page, and each record of the pass is a row, down the page in the order
/// things started, with its mark in the lane of the step its record names (`step`): a tick
/// for an activity, a block in its kind's colour for a call-out, a blue block for the sleep.
/// A line joins the marks, so the pass reads as a path through the steps. Each row says what
/// happened and how long it took; a sleep says what ended it. The depth of every row is a
/// lane at the left, and a call-out that ran the loop nested is a frame around the nested
/// run's rows, its label on its own row above them and again on the row that closes it, so
/// neither is hidden by the nested run.
///
/// Every mark is a `<g class="record KIND" data-seq="N" data-step="S" data-depth="D">`, in
/// row order, so a program can read the picture back.
struct PassDrawing {
  /// What one row shows: a record, the end of a call-out that ran a nested run, or step 5
  /// finding the port of a step-9 call-out ready (the loop reports no step 5 of its own: a
  /// pass of its run that handles a port at step 9 with no step 4 to 8 before it went there
  /// from step 5, as the guide's sequence says).
  enum Row {
    case record(TraceRecord)
    case end(TraceRecord)
    case portFound(TraceRecord)

    var record: TraceRecord {
      switch self {
      case .record(let record), .end(let record), .portFound(let record): record
      }
    }

    /// The lane of the row's mark: the record's step, or 5 for a port found ready.
    var step: Int? {
      if case .portFound = self { return 5 }
      return record.step.flatMap { (1...10).contains($0) ? $0 : nil }
    }
  }

  /// The guide's ten steps, as the lanes' headings.
  static let stepNames = [
    "entry", "timers announced", "sources announced", "custom sources fire", "port ready",
    "about to sleep", "asleep", "woke", "handle what woke it", "exit",
  ]

  let pass: LoopPass

  private let rowHeight = 20.0
  private let laneWidth = 44.0
  private let depthWidth = 12.0
  // Monospace at 11 px: about this wide per character.
  private let characterWidth = 6.7

  /// The rows: every record, and after the last record inside a call-out that ran a nested
  /// run, that call-out's end.
  var rows: [Row] {
    let records = pass.records
    var ends: [Int: [TraceRecord]] = [:]
    for (index, record) in records.enumerated() where record.record == .callout {
      let inside = records.indices.filter { other in
        other > index && records[other].depth > record.depth
          && records[other].timestamp < record.endTimestamp
      }
      if let last = inside.last { ends[last, default: []].insert(record, at: 0) }
    }
    let found = portFoundInStepFive(records)
    var rows: [Row] = []
    for (index, record) in records.enumerated() {
      if index == found { rows.append(.portFound(record)) }
      rows.append(.record(record))
      rows += (ends[index] ?? []).map { .end($0) }
    }
    return rows
  }

  /// The index of the pass's first step-9 port call-out when step 5 found that port ready:
  /// in the pass's own run, no record of steps 4 to 8 comes before it (a source fired at
  /// step 4 lets the loop skip step 5; a sleep means the port woke it instead). A run of
  /// this one pass is left out: a zero-timeout run skips the sleep too, and its look for
  /// ports is the poll of step 7, which reports nothing either.
  private func portFoundInStepFive(_ records: [TraceRecord]) -> Int? {
    let own = records.indices.filter { records[$0].depth == pass.depth }
    let wholeRun =
      own.contains { records[$0].activity == "entry" }
      && own.contains { records[$0].activity == "exit" }
    guard !wholeRun, let first = own.first(where: { records[$0].step == 9 }),
      records[first].record == .callout, records[first].calloutKind == "port",
      !own.contains(where: { $0 < first && (4...8).contains(records[$0].step ?? 0) })
    else { return nil }
    return first
  }

  func svg() -> String {
    let rows = rows
    let depths = rows.map(\.record.depth)
    let maxDepth = depths.max() ?? pass.depth
    let levels = maxDepth - pass.depth + 1
    let depthX = 96.0
    let lanesX = depthX + Double(levels) * depthWidth + 12
    let labelsX = lanesX + 10 * laneWidth + 12
    let labels = rows.enumerated().map { label(row: $0.element, at: $0.offset, in: rows) }
    let longest =
      zip(labels, rows).map { label, row in
        Double(label.count) * characterWidth + indent(row.record)
      }.max() ?? 0
    let width = max(900, labelsX + longest + 20)
    let top = 185.0
    let height = top + Double(rows.count) * rowHeight + 40
    let origin = pass.records.first?.timestamp ?? 0
    let end = pass.records.map(\.endTimestamp).max() ?? origin
    let head = pass.records.first { $0.activity == "beforeTimers" } ?? pass.records.first
    func laneCenter(_ step: Int) -> Double { lanesX + (Double(step) - 0.5) * laneWidth }
    func rowTop(_ index: Int) -> Double { top + Double(index) * rowHeight }

    var svg = """
      <?xml version="1.0" encoding="UTF-8"?>
      <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
      font-family="monospace" font-size="11">
      <title>One run-loop pass</title>
      <rect x="0" y="0" width="100%" height="100%" fill="white"/>

      """
    let thread = escape(head?.thread ?? "?")
    svg += "<text x=\"4\" y=\"18\" font-weight=\"bold\">One pass: pass \(pass.iteration) of "
    svg += "loop \(pass.loop) (\(thread)), depth \(pass.depth), mode "
    svg += "'\(escape(head?.mode ?? "?"))', \(Self.length(end.saturatingSubtracting(origin)))"
    svg += "</text>\n"
    svg += "<text x=\"4\" y=\"34\" fill=\"#666\">Lanes: the guide's sequence of events, "
    svg += "from each record's step. Rows: records in the order they started. "
    svg += "Left: depth of the run.</text>\n"

    // The lanes, their headings, and the depth lanes' heading.
    let reached = Set(rows.compactMap(\.step))
    for step in 1...10 {
      let left = lanesX + Double(step - 1) * laneWidth
      let fill = step % 2 == 0 ? "#f4f4f4" : "#fafafa"
      svg += "<rect class=\"lane\" data-step=\"\(step)\" x=\"\(fmt(left))\" "
      svg += "y=\"\(fmt(top - 6))\" width=\"\(fmt(laneWidth))\" "
      svg += "height=\"\(fmt(Double(rows.count) * rowHeight + 12))\" fill=\"\(fill)\"/>\n"
      let colour = reached.contains(step) ? "#000" : "#aaa"
      let weight = reached.contains(step) ? " font-weight=\"bold\"" : ""
      svg += "<text x=\"\(fmt(laneCenter(step)))\" y=\"\(fmt(top - 12))\" "
      svg += "text-anchor=\"middle\" fill=\"\(colour)\"\(weight)>\(step)</text>"
      svg += "<text x=\"\(fmt(laneCenter(step) + 2))\" y=\"\(fmt(top - 26))\" fill=\"\(colour)\" "
      svg += "transform=\"rotate(-40 \(fmt(laneCenter(step) + 2)) \(fmt(top - 26)))\">"
      svg += "\(Self.stepNames[step - 1])</text>\n"
    }
    svg += "<text x=\"\(fmt(depthX))\" y=\"\(fmt(top - 12))\" fill=\"#666\">depth</text>\n"

    // Depth lanes: for each level, one bar per stretch of rows at least that deep.
    for level in pass.depth...maxDepth {
      var index = 0
      while index < rows.count {
        guard depths[index] >= level else {
          index += 1
          continue
        }
        let first = index
        while index < rows.count && depths[index] >= level { index += 1 }
        let mode = rows[first].record.mode
        let x = depthX + Double(level - pass.depth) * depthWidth
        svg += "<rect class=\"depth\" data-depth=\"\(level)\" x=\"\(fmt(x))\" "
        svg += "y=\"\(fmt(rowTop(first) + 1))\" width=\"\(fmt(depthWidth - 4))\" "
        svg += "height=\"\(fmt(Double(index - first) * rowHeight - 2))\" "
        svg += "fill=\"\(Self.depthColor(level))\"><title>depth \(level): a run in "
        svg += "'\(escape(mode))'</title></rect>\n"
      }
    }

    // Frames around nested runs, under the marks and their labels.
    for (index, row) in rows.enumerated() {
      guard case .record(let callout) = row, callout.record == .callout,
        let close = rows.indices.first(where: { other in
          if case .end(let ended) = rows[other], ended.seq == callout.seq { return true }
          return false
        })
      else { continue }
      svg += "<rect class=\"nesting-callout\" data-seq=\"\(callout.seq)\" "
      svg += "x=\"\(fmt(lanesX - 4))\" y=\"\(fmt(rowTop(index) + 1))\" "
      svg += "width=\"\(fmt(width - lanesX))\" "
      svg += "height=\"\(fmt(Double(close - index + 1) * rowHeight - 2))\" rx=\"4\" "
      svg += "fill=\"\(Self.depthColor(callout.depth + 1))\" fill-opacity=\"0.15\" "
      svg += "stroke=\"\(Self.kindColor(callout.calloutKind ?? ""))\" "
      svg += "stroke-width=\"2\"><title>\(escape(Self.calloutLabel(callout))): "
      svg += "the call-out that ran the nested run</title></rect>\n"
    }

    // The path through the steps.
    let points = rows.enumerated().compactMap { index, row -> String? in
      guard let step = row.step else { return nil }
      return "\(fmt(laneCenter(step))),\(fmt(rowTop(index) + rowHeight / 2))"
    }
    if points.count > 1 {
      svg += "<polyline class=\"path\" points=\"\(points.joined(separator: " "))\" "
      svg += "fill=\"none\" stroke=\"#999\" stroke-width=\"1\"/>\n"
    }

    for (index, row) in rows.enumerated() {
      let record = row.record
      let y = rowTop(index)
      let offset = record.timestamp.saturatingSubtracting(origin)
      let at = row.isEnd ? record.endTimestamp.saturatingSubtracting(origin) : offset
      svg += "<text x=\"86\" y=\"\(fmt(y + 14))\" text-anchor=\"end\" fill=\"#666\">"
      svg += "+\(Self.milliseconds(at))</text>"
      let step = row.step
      let kind =
        switch row {
        case .end: "callout-end"
        case .portFound: "port-found"
        case .record: record.record.rawValue
        }
      svg += "<g class=\"record \(kind)\" data-seq=\"\(record.seq)\" "
      svg += "data-step=\"\(step.map(String.init) ?? "")\" data-depth=\"\(record.depth)\">"
      svg += "<title>\(escape(labels[index]))</title>"
      if let step {
        let x = laneCenter(step)
        switch (row, record.record) {
        case (.portFound, _):
          // A diamond: a look, not a call-out.
          svg += "<polygon points=\"\(fmt(x)),\(fmt(y + 3)) \(fmt(x + 7)),\(fmt(y + 10)) "
          svg += "\(fmt(x)),\(fmt(y + 17)) \(fmt(x - 7)),\(fmt(y + 10))\" "
          svg += "fill=\"\(Self.kindColor("port"))\" stroke=\"#222\"/>"
        case (.end, _):
          svg += "<rect x=\"\(fmt(x - 15))\" y=\"\(fmt(y + 4))\" width=\"30\" height=\"12\" "
          svg += "fill=\"white\" stroke=\"\(Self.kindColor(record.calloutKind ?? ""))\" "
          svg += "stroke-width=\"2\"/>"
        case (_, .activity):
          svg += "<line x1=\"\(fmt(x))\" y1=\"\(fmt(y + 3))\" x2=\"\(fmt(x))\" "
          svg += "y2=\"\(fmt(y + 17))\" stroke=\"#222\" stroke-width=\"3\"/>"
        case (_, .sleep):
          svg += "<rect x=\"\(fmt(x - 15))\" y=\"\(fmt(y + 4))\" width=\"30\" height=\"12\" "
          svg += "fill=\"#4a90d9\"/>"
        default:
          svg += "<rect x=\"\(fmt(x - 15))\" y=\"\(fmt(y + 4))\" width=\"30\" height=\"12\" "
          svg += "fill=\"\(Self.kindColor(record.calloutKind ?? ""))\" stroke=\"#555\" "
          svg += "stroke-width=\"0.5\"/>"
        }
      }
      svg += "</g>"
      let weight = row.isEnd || rows.contains(where: { $0.isEnd && $0.record.seq == record.seq })
      svg += "<text class=\"label\" x=\"\(fmt(labelsX + indent(record)))\" "
      svg += "y=\"\(fmt(y + 14))\"\(weight ? " font-weight=\"bold\"" : "")>"
      svg += "\(escape(labels[index]))</text>\n"
    }
    svg += "</svg>\n"
    return svg
  }

  /// How far a row's label is moved right: by its depth below the pass's.
  private func indent(_ record: TraceRecord) -> Double {
    Double(max(0, record.depth - pass.depth)) * 16
  }

  /// What a row says.
  func label(row: Row, at index: Int, in rows: [Row]) -> String {
    let record = row.record
    if case .end = row {
      return "end of \(Self.calloutLabel(record)), \(Self.length(record.duration ?? 0)) "
        + "with the nested run inside it"
    }
    if case .portFound = row {
      return "\(record.calloutName ?? "a port") found ready: no sleep, steps 6 to 8 skipped"
    }
    switch record.record {
    case .activity:
      let activity = record.activity ?? "?"
      if activity == "entry" || activity == "exit" {
        return "\(activity): a run in '\(record.mode)' (depth \(record.depth))"
      }
      return activity
    case .sleep:
      return "sleep \(Self.length(record.duration ?? 0)), \(endOfSleep(at: index, in: rows))"
    case .callout:
      return "\(Self.calloutLabel(record)) \(Self.length(record.duration ?? 0))"
    default:
      return record.record.rawValue
    }
  }

  /// What ended the sleep at `index`: the first call-out of step 9 in the same run after
  /// it, or else whether the run then ended or went back to step 2 with nothing to handle.
  private func endOfSleep(at index: Int, in rows: [Row]) -> String {
    let sleep = rows[index].record
    for row in rows[(index + 1)...] {
      let record = row.record
      guard record.depth == sleep.depth, case .record = row else { continue }
      if record.record == .callout && record.step == 9 {
        return "ended by \(Self.calloutLabel(record)) (step 9)"
      }
      if record.activity == "exit" { return "nothing to handle at step 9, then the run ended" }
    }
    return "woken with nothing to handle at step 9: back to step 2"
  }

  static func calloutLabel(_ record: TraceRecord) -> String {
    "\(record.calloutKind ?? "call-out"): \(record.calloutName ?? "")"
  }

  /// `nanoseconds` for people: microseconds under a millisecond, else milliseconds.
  static func length(_ nanoseconds: Int64) -> String {
    nanoseconds < 1_000_000
      ? "\((Double(nanoseconds) / 100).rounded() / 10) µs"
      : "\((Double(nanoseconds) / 100_000).rounded() / 10) ms"
  }

  /// `nanoseconds` as milliseconds with three decimals, for the time column.
  static func milliseconds(_ nanoseconds: Int64) -> String {
    let microseconds = (nanoseconds + 500) / 1000
    let fraction = String(microseconds % 1000)
    return
      "\(microseconds / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) ms"
  }

  static func kindColor(_ kind: String) -> String { TimelineDrawing.kindColor(kind) }

  static func depthColor(_ depth: Int) -> String {
    ["#c8c8c8", "#e6c84a", "#7ec87e", "#d08080"][min(max(depth, 1), 4) - 1]
  }

  private func fmt(_ value: Double) -> String { TraceTimeline.fmt(value) }
  private func escape(_ text: String) -> String { TraceTimeline.escape(text) }
}

extension PassDrawing.Row {
  /// Whether the row closes a call-out that ran a nested run.
  var isEnd: Bool {
    if case .end = self { return true }
    return false
  }
}
