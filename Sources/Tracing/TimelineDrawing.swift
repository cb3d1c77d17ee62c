/// Draws one ``TraceTimeline`` picture: the layout, the colours and the SVG text. Rows are
/// threads; in a row, each run is a band in its mode's shade (nested runs narrower, inside),
/// sleeps a blue bar across the middle, call-outs blocks in their kind's colour with their
/// names written in when there is room, stalls outlined in red and named above the row, and
/// an arrow from each call-out to the call-outs it caused (schema version 3's `cause_span`),
/// across rows when the effect ran on another thread. Each activity the loop reported is a
/// tick at the top of its row, taller for a run's entry and exit, named with its step on
/// hover.
package struct TimelineDrawing {
  let records: [TraceRecord]
  let spans: [TraceTimeline.Span]
  let options: TraceTimeline.Options

  private let labelWidth = 230.0
  private let rowHeight = 58.0
  // Monospace at 11 px: about this wide per character.
  private let characterWidth = 6.7

  init(records: [TraceRecord], spans: [TraceTimeline.Span], options: TraceTimeline.Options) {
    self.records = records
    self.spans = spans
    self.options = options
  }

  func svg() -> String {
    let width = Double(max(options.width, 400))
    let plotWidth = width - labelWidth - 20
    // The trace's own start and end, and the window drawn, as absolute timestamps.
    let origin = records.map(\.timestamp).min() ?? 0
    let traceEnd = max(records.map(\.endTimestamp).max() ?? 0, origin.saturatingAdding(1))
    let start = origin.saturatingAdding(max(0, options.from ?? 0))
    var end = options.to.map { origin.saturatingAdding($0) } ?? traceEnd
    if end <= start { end = start.saturatingAdding(1) }
    // Differences in Double: a damaged log's times may span more than Int64 holds.
    let scale = plotWidth / (Double(end) - Double(start))
    func x(_ time: Int64) -> Double {
      labelWidth + (min(max(Double(time), Double(start)), Double(end)) - Double(start)) * scale
    }

    // The threads with something in the window, in order of first appearance.
    var threads: [(tid: Int32, name: String, loop: UInt64)] = []
    let visible = Set(spans.filter { $0.end >= start && $0.start <= end }.map(\.tid))
    for record in records
    where visible.contains(record.tid) && !threads.contains(where: { $0.tid == record.tid }) {
      threads.append((record.tid, record.thread, record.loop))
    }
    let watchdogOn = records.contains { $0.record == .stall }
    let modes = orderedModes()
    let kinds = orderedKinds()
    // Legends: what the loop did, call-out kinds, then modes; wrapped to the width.
    var legend: [(String, String, Bool)] = [("asleep", TraceTimeline.color(.sleeping), false)]
    legend += kinds.map { ("\($0) call-out", Self.kindColor($0), false) }
    legend.append(
      records.contains { $0.record == .stall }
        ? ("stall (watchdog)", "#d0021b", true)
        : ("stall ≥ \(ms(options.stallThreshold)) ms", "#d0021b", true))
    let links = causeLinks()
    if !links.isEmpty { legend.append(("→ caused", Self.arrowColor, false)) }
    if records.contains(where: { $0.record == .activity }) {
      legend.append(("activity (tick)", Self.tickColor, false))
    }
    let (legendText, legendBottom) = legendRows(
      [legend, modes.map { ("run in '\($0)'", modeColor($0, modes), false) }], top: 34,
      right: width - 10)
    let top = legendBottom + 16
    let height = top + rowHeight * Double(max(threads.count, 1)) + 44

    var svg = """
      <?xml version="1.0" encoding="UTF-8"?>
      <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
      font-family="monospace" font-size="11">
      <title>Run-loop timeline</title>
      <rect x="0" y="0" width="100%" height="100%" fill="white"/>
      <defs><clipPath id="plot"><rect x="\(fmt(labelWidth))" y="0" \
      width="\(fmt(plotWidth))" height="\(fmt(height))"/></clipPath>
      <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" \
      markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" \
      fill="\(Self.arrowColor)"/></marker></defs>

      """
    let windowText =
      "\(ms(start.saturatingSubtracting(origin))) to \(ms(end.saturatingSubtracting(origin))) ms of a \(ms(traceEnd.saturatingSubtracting(origin))) ms trace"
    svg += "<text x=\"4\" y=\"16\" font-weight=\"bold\">Run-loop timeline: \(windowText)</text>\n"
    svg += legendText

    svg += "<g>\n"
    for (row, thread) in threads.enumerated() {
      let y = top + Double(row) * rowHeight
      svg += "<text x=\"4\" y=\"\(fmt(y + 22))\">\(escape(clipped(thread.name, 30)))</text>"
      svg += "<text x=\"4\" y=\"\(fmt(y + 36))\" fill=\"#666\">tid \(thread.tid), loop "
      svg += "\(thread.loop)</text>\n"
      svg += "<line x1=\"\(fmt(labelWidth))\" y1=\"\(fmt(y + rowHeight - 2))\" "
      svg += "x2=\"\(fmt(labelWidth + plotWidth))\" y2=\"\(fmt(y + rowHeight - 2))\" "
      svg += "stroke=\"#ddd\"/>\n"
    }
    svg += "</g>\n<g clip-path=\"url(#plot)\">\n"
    var stalls: [(x: Double, y: Double, text: String)] = []
    for span in spans where span.end >= start && span.start <= end {
      guard let row = threads.firstIndex(where: { $0.tid == span.tid }) else { continue }
      let y = top + Double(row) * rowHeight
      let left = x(span.start)
      let spanWidth = max(0.5, x(span.end) - left)
      // Each depth insets its runs and call-outs by more than a call-out's own inset from its
      // run, so that a call-out that runs the loop nested stays visible as a frame around
      // the nested run's band instead of being painted over by it.
      let nesting = Double(min(max(span.depth, 1), 3) - 1) * 9
      let length = "\(ms(span.end.saturatingSubtracting(span.start))) ms"
      switch span.state {
      case .waking:
        svg += "<rect class=\"waking\" x=\"\(fmt(left))\" y=\"\(fmt(y + 4 + nesting))\" "
        svg +=
          "width=\"\(fmt(spanWidth))\" height=\"\(fmt(max(2, rowHeight - 10 - 2 * nesting)))\" "
        svg += "fill=\"\(modeColor(span.mode, modes))\" stroke=\"#888\" stroke-width=\"0.5\">"
        svg += "<title>\(escape(span.label)) (depth \(span.depth)) \(length)</title></rect>\n"
      case .sleeping:
        svg += "<rect class=\"sleeping\" x=\"\(fmt(left))\" y=\"\(fmt(y + 22))\" "
        svg +=
          "width=\"\(fmt(spanWidth))\" height=\"12\" fill=\"\(TraceTimeline.color(.sleeping))\">"
        svg += "<title>sleep \(length)</title></rect>\n"
      case .working:
        let kind = span.label.split(separator: ":").first.map(String.init) ?? ""
        // Long, and awake all along: a call-out that slept in a nested run was not stuck.
        // When the watchdog was on, its records say where the stalls were instead.
        let isStall =
          !watchdogOn && span.end.saturatingSubtracting(span.start) >= options.stallThreshold
          && !spans.contains {
            $0.tid == span.tid && $0.state == .sleeping && $0.start >= span.start
              && $0.end <= span.end
          }
        svg += "<rect class=\"working\" x=\"\(fmt(left))\" y=\"\(fmt(y + 10 + nesting))\" "
        svg +=
          "width=\"\(fmt(spanWidth))\" height=\"\(fmt(max(2, rowHeight - 22 - 2 * nesting)))\" "
        svg += "fill=\"\(Self.kindColor(kind))\""
        if isStall { svg += " stroke=\"#d0021b\" stroke-width=\"2\"" }
        svg += "><title>\(escape(span.label)) \(length)</title></rect>\n"
        let room = Int((spanWidth - 4) / characterWidth)
        if room >= 3 {
          svg += "<text x=\"\(fmt(left + 2))\" y=\"\(fmt(y + rowHeight / 2 + 3))\" "
          // The full label on hover, after the text so that the text comes first.
          svg += "fill=\"#111\">\(escape(fitted(span.label, room)))"
          svg += "<title>\(escape(span.label))</title></text>\n"
        }
        if isStall {
          stalls.append((left, y, "stall: \(span.label) \(length)"))
        }
      }
    }
    // Activity ticks above the runs, so that the passes can be counted and each step found.
    for record in records where record.record == .activity {
      guard record.timestamp >= start && record.timestamp <= end,
        let row = threads.firstIndex(where: { $0.tid == record.tid })
      else { continue }
      let y = top + Double(row) * rowHeight
      let tx = x(record.timestamp)
      let activity = record.activity ?? "?"
      let bounds = activity == "entry" || activity == "exit"
      let step = record.step.map { ", step \($0)" } ?? ""
      svg += "<line class=\"activity\" data-step=\"\(record.step.map(String.init) ?? "")\" "
      svg += "x1=\"\(fmt(tx))\" y1=\"\(fmt(y))\" x2=\"\(fmt(tx))\" "
      svg += "y2=\"\(fmt(y + (bounds ? 10 : 5)))\" stroke=\"\(Self.tickColor)\" "
      svg += "stroke-width=\"1\"><title>\(escape(activity))\(step), depth \(record.depth)"
      svg += "</title></line>\n"
    }
    // The watchdog's reports: a mark where it saw the stall, naming the call-out, and a red
    // bar under the whole time the loop stayed awake.
    for record in records where record.record == .stall || record.record == .recovery {
      guard record.endTimestamp >= start && record.timestamp <= end,
        let row = threads.firstIndex(where: { $0.tid == record.tid })
      else { continue }
      let y = top + Double(row) * rowHeight
      if record.record == .stall {
        let awake = ms(record.duration ?? 0)
        stalls.append(
          (
            x(record.endTimestamp), y,
            "stall: \(record.calloutKind ?? "-"): \(record.calloutName ?? "") awake \(awake) ms"
          ))
      } else {
        let left = x(record.timestamp)
        svg += "<rect class=\"stalled\" x=\"\(fmt(left))\" y=\"\(fmt(y + rowHeight - 9))\" "
        svg += "width=\"\(fmt(max(1, x(record.endTimestamp) - left)))\" height=\"4\" "
        svg += "fill=\"#d0021b\"><title>stalled \(ms(record.duration ?? 0)) ms</title></rect>\n"
      }
    }
    // Causes over everything else in the plot: from the middle of the causing call-out (or
    // the effect's start, if that is earlier: the cause's record does not say when in it the
    // work was queued) to the start of the effect, curved when it changes rows.
    for link in links
    where link.cause.timestamp <= end && link.effect.timestamp >= start {
      guard let causeRow = threads.firstIndex(where: { $0.tid == link.cause.tid }),
        let effectRow = threads.firstIndex(where: { $0.tid == link.effect.tid })
      else { continue }
      let middle = link.cause.timestamp.saturatingAdding((link.cause.duration ?? 0) / 2)
      let x1 = x(min(middle, link.effect.timestamp))
      let x2 = x(link.effect.timestamp)
      let y1 = top + Double(causeRow) * rowHeight + rowHeight / 2
      let y2 = top + Double(effectRow) * rowHeight + rowHeight / 2
      // Same row: an arc above the row; another row: an S curve.
      let path: String
      if causeRow == effectRow {
        let lift = y1 - rowHeight * 0.45
        path =
          "M \(fmt(x1)) \(fmt(y1)) C \(fmt(x1)) \(fmt(lift)), \(fmt(x2)) \(fmt(lift)), "
          + "\(fmt(x2)) \(fmt(y1 - 6))"
      } else {
        let bend = max(12, (x2 - x1) / 2)
        path =
          "M \(fmt(x1)) \(fmt(y1)) C \(fmt(x1 + bend)) \(fmt(y1)), \(fmt(x2 - bend)) \(fmt(y2)), "
          + "\(fmt(x2)) \(fmt(y2))"
      }
      svg += "<path class=\"cause\" d=\"\(path)\" fill=\"none\" stroke=\"\(Self.arrowColor)\" "
      svg += "stroke-width=\"1.5\" marker-end=\"url(#arrow)\"><title>"
      svg += "\(escape(label(link.cause))) caused \(escape(label(link.effect)))</title></path>\n"
    }
    svg += "</g>\n"
    // Stall marks above their call-outs, outside the clip so their text is never cut.
    stalls.sort { ($0.y, $0.x) < ($1.y, $1.x) }
    for (index, stall) in stalls.enumerated() {
      svg += "<path class=\"stall\" d=\"M \(fmt(stall.x - 5)) \(fmt(stall.y + 1)) "
      svg += "L \(fmt(stall.x + 5)) \(fmt(stall.y + 1)) L \(fmt(stall.x)) \(fmt(stall.y + 9)) z\" "
      svg += "fill=\"#d0021b\"/>"
      // The name, in the room up to the next stall of the row (or the plot's edge).
      let next = stalls.dropFirst(index + 1).first { $0.y == stall.y }?.x
      let limit = min(next.map { $0 - 8 } ?? .infinity, labelWidth + plotWidth)
      let room = Int((limit - stall.x - 8) / (characterWidth * 0.92))
      if room >= 4 {
        svg += "<text x=\"\(fmt(stall.x + 8))\" y=\"\(fmt(stall.y + 9))\" fill=\"#d0021b\" "
        svg += "font-size=\"10\">\(escape(clipped(stall.text, room)))</text>\n"
      }
    }
    svg += axis(
      start: start, end: end, origin: origin, scale: scale,
      y: top + rowHeight * Double(max(threads.count, 1)) + 8)
    svg += "</svg>\n"
    return svg
  }

  /// Each call-out record paired with the call-out record that caused it, when both are in
  /// the trace: an effect's (`cause_pid` or `pid`, `cause_span`) is its cause's (`pid`,
  /// `span`).
  private func causeLinks() -> [(cause: TraceRecord, effect: TraceRecord)] {
    var bySpan: [CauseFlows.Key: TraceRecord] = [:]
    for record in records where record.record == .callout {
      if let key = CauseFlows.Key(spanOf: record) { bySpan[key] = record }
    }
    guard !bySpan.isEmpty else { return [] }
    return records.compactMap { effect in
      guard effect.record == .callout, let key = CauseFlows.Key(causeOf: effect),
        let cause = bySpan[key]
      else { return nil }
      return (cause, effect)
    }
  }

  private func label(_ callout: TraceRecord) -> String {
    "\(callout.calloutKind ?? ""): \(callout.calloutName ?? "") (tid \(callout.tid))"
  }

  static let arrowColor = "#5b2c83"
  static let tickColor = "#222"

  /// The legend items, each group starting a line, wrapped at `right`; returns the text and
  /// the baseline of the last line.
  private func legendRows(_ groups: [[(String, String, Bool)]], top: Double, right: Double) -> (
    String, Double
  ) {
    var text = ""
    var y = top - 18
    for group in groups where !group.isEmpty {
      y += 18
      var lx = labelWidth
      for (label, color, outlined) in group {
        let itemWidth = 16 + Double(label.count) * characterWidth + 14
        if lx > labelWidth && lx + itemWidth > right {
          y += 18
          lx = labelWidth
        }
        text += "<rect x=\"\(fmt(lx))\" y=\"\(fmt(y - 10))\" width=\"12\" height=\"12\" "
        text +=
          outlined
          ? "fill=\"white\" stroke=\"\(color)\" stroke-width=\"2\"/>" : "fill=\"\(color)\"/>"
        text += "<text x=\"\(fmt(lx + 16))\" y=\"\(fmt(y))\">\(escape(label))</text>\n"
        lx += itemWidth
      }
    }
    return (text, y)
  }

  /// A time axis with about ten ticks, in milliseconds from the trace's first record.
  private func axis(start: Int64, end: Int64, origin: Int64, scale: Double, y: Double) -> String {
    var text = ""
    let first = (Double(start) - Double(origin)) / 1e6
    let last = (Double(end) - Double(origin)) / 1e6
    let step = TraceTimeline.niceStep((last - first) / 10)
    var tick = (first / step).rounded(.up) * step
    while tick <= last + step / 1e6 {
      let tx = labelWidth + (tick - first) * 1e6 * scale
      text += "<line x1=\"\(fmt(tx))\" y1=\"\(fmt(y))\" x2=\"\(fmt(tx))\" "
      text += "y2=\"\(fmt(y + 5))\" stroke=\"black\"/>"
      text += "<text x=\"\(fmt(tx))\" y=\"\(fmt(y + 18))\" text-anchor=\"middle\">"
      text += "\(fmt(tick)) ms</text>\n"
      tick += step
    }
    return text
  }

  /// The modes in order of first appearance, `default` first.
  private func orderedModes() -> [String] {
    var modes: [String] = []
    for span in spans where span.state == .waking && !modes.contains(span.mode) {
      modes.append(span.mode)
    }
    return modes.sorted { ($0 == "default" ? 0 : 1) < ($1 == "default" ? 0 : 1) }
  }

  private func orderedKinds() -> [String] {
    var kinds: [String] = []
    for record in records where record.record == .callout {
      let kind = record.calloutKind ?? ""
      if !kinds.contains(kind) { kinds.append(kind) }
    }
    return kinds
  }

  private func modeColor(_ mode: String, _ modes: [String]) -> String {
    let shades = [
      "#ececec", "#fff0a8", "#d4f4d4", "#fbdcec", "#d8e6ff", "#ffe0bd", "#e4dbff", "#d6f5f5",
    ]
    let index = modes.firstIndex(of: mode) ?? 0
    return shades[index % shades.count]
  }

  /// The colour of a call-out of `kind`, the same in every picture.
  package static func kindColor(_ kind: String) -> String {
    switch kind {
    case "timer": "#f5a623"
    case "source": "#b07cc6"
    case "block": "#7ed321"
    case "port": "#50c8c8"
    case "observer": "#a0a0a0"
    case "mainQueue": "#8b6f47"
    case "job": "#e8a0c8"
    default: "#c8b070"
    }
  }

  /// A call-out's label (`kind: name`) in `room` characters: whole when it fits, else its
  /// name alone (the kind is the block's colour), elided only when even that is too long.
  private func fitted(_ label: String, _ room: Int) -> String {
    guard label.count > room, let colon = label.range(of: ": ") else {
      return clipped(label, room)
    }
    return clipped(String(label[colon.upperBound...]), room)
  }

  private func clipped(_ text: String, _ room: Int) -> String {
    guard text.count > room else { return text }
    return String(text.prefix(max(room - 1, 1))) + "…"
  }

  private func ms(_ nanoseconds: Int64) -> String {
    fmt(Double(nanoseconds) / 1e6)
  }

  private func fmt(_ value: Double) -> String { TraceTimeline.fmt(value) }
  private func escape(_ text: String) -> String { TraceTimeline.escape(text) }
}
