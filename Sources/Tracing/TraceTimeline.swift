/// Renders a trace as an SVG timeline: one row per thread, showing each run of its loop as a
/// band shaded by the run's mode (a nested run as a narrower band inside it), when the loop
/// slept (blue), and its call-outs coloured by kind and labelled with their names where they
/// are wide enough, on a time axis in milliseconds from the trace's first record. Call-outs
/// longer than a threshold, awake all along, are marked as stalls (red). An arrow joins each
/// call-out that caused another (`cause_span`) to it, across rows when the effect ran on
/// another thread. A window (``Options/from`` and
/// ``Options/to``, or ``window(aroundSlowest:in:)``) zooms in on part of a long trace, where
/// microsecond call-outs become visible.
///
/// ```swift
/// let svg = TraceTimeline.svg(from: try TraceLog.read(contentsOf: "/tmp/loop.jsonl"))
/// try svg.write(toFile: "/tmp/loop.svg", atomically: true, encoding: .utf8)
/// ```
public enum TraceTimeline {
  /// The spans of `records`: every run (outermost and nested, with its mode and depth) as
  /// waking, with sleeps and call-outs on top.
  ///
  /// ```swift
  /// let sleeping = TraceTimeline.spans(from: records).filter { $0.state == .sleeping }
  /// ```
  public static func spans(from records: [TraceRecord]) -> [Span] {
    var spans: [Span] = []
    // Per thread, the runs entered and not yet exited: start, mode, depth.
    var open: [Int32: [(start: Int64, mode: String, depth: Int)]] = [:]
    var last: [Int32: Int64] = [:]
    // A loss record is the JSON sink's, on its writer thread: no loop's time.
    for record in records where record.record != .loss {
      last[record.tid] = max(last[record.tid] ?? 0, record.endTimestamp)
      switch record.record {
      case .activity where record.activity == "entry":
        open[record.tid, default: []].append((record.timestamp, record.mode, record.depth))
      case .activity where record.activity == "exit":
        // A run whose entry was before the trace began starts at the trace's first record of
        // its thread.
        let run =
          open[record.tid]?.popLast()
          ?? (
            records.first { $0.tid == record.tid }?.timestamp ?? record.timestamp, record.mode,
            record.depth
          )
        spans.append(
          Span(
            tid: record.tid, state: .waking, start: run.start, end: record.timestamp,
            label: "run \(run.mode)", mode: run.mode, depth: run.depth))
      case .activity:
        break
      case .callout:
        spans.append(
          Span(
            tid: record.tid, state: .working, start: record.timestamp, end: record.endTimestamp,
            label: "\(record.calloutKind ?? ""): \(record.calloutName ?? "")", mode: record.mode,
            depth: record.depth))
      case .sleep:
        spans.append(
          Span(
            tid: record.tid, state: .sleeping, start: record.timestamp,
            end: record.endTimestamp, label: "sleep", mode: record.mode, depth: record.depth))
      case .stall, .recovery, .loss:
        // Drawn from the records themselves (marks), not as spans of the loop's time; a loss
        // is the log's, not a loop's.
        break
      }
    }
    for (tid, runs) in open {
      for run in runs {
        spans.append(
          Span(
            tid: tid, state: .waking, start: run.start, end: last[tid] ?? run.start,
            label: "run \(run.mode)", mode: run.mode, depth: run.depth))
      }
    }
    // In drawing order: a run, then the call-outs at its depth, then the runs nested in
    // them (so that a nested run shows over the call-out that made it), and sleeps last.
    func layer(_ span: Span) -> Int {
      switch span.state {
      case .waking: 2 * span.depth
      case .working: 2 * span.depth + 1
      case .sleeping: 1_000
      }
    }
    return spans.sorted { (layer($0), $0.start, $0.tid) < (layer($1), $1.start, $1.tid) }
  }

  /// A window (nanoseconds after the trace's first record, as ``Options/from`` and
  /// ``Options/to`` take) around the `count` slowest call-outs (by time awake: less the
  /// sleeps of nested runs they made): from a little before the
  /// first of them to a little after the last, so that they fill most of the picture.
  /// `nil` when the trace has no call-out.
  ///
  /// ```swift
  /// if let window = TraceTimeline.window(aroundSlowest: 3, in: records) {
  ///   let svg = TraceTimeline.svg(from: records, options: .init(from: window.from, to: window.to))
  /// }
  /// ```
  public static func window(aroundSlowest count: Int, in records: [TraceRecord]) -> (
    from: Int64, to: Int64
  )? {
    let origin = records.map(\.timestamp).min() ?? 0
    // Slowest by time awake: a call-out's length less the sleeps of nested runs inside it
    // (the longest few by length are the candidates).
    let sleeps = records.filter { $0.record == .sleep }
    func awake(_ callout: TraceRecord) -> Int64 {
      let slept = sleeps.filter {
        $0.tid == callout.tid && $0.timestamp >= callout.timestamp
          && $0.endTimestamp <= callout.endTimestamp
      }.reduce(Int64(0)) { $0.saturatingAdding($1.duration ?? 0) }
      return (callout.duration ?? 0).saturatingSubtracting(slept)
    }
    let candidates = records.filter { $0.record == .callout }
      .sorted { ($0.duration ?? 0, $1.seq) > ($1.duration ?? 0, $0.seq) }
      .prefix(max(count, 1) * 8)
      .map { ($0, awake($0)) }
    let slowest = candidates.sorted { ($0.1, $1.0.seq) > ($1.1, $0.0.seq) }
      .prefix(max(count, 1)).map(\.0)
    guard let first = slowest.map(\.timestamp).min(), let end = slowest.map(\.endTimestamp).max()
    else { return nil }
    // A margin of a quarter of the covered time on each side, and at least 0.2 ms.
    let margin = max((Double(end) - Double(first)) / 4, 200_000)
    let from = max(0, Double(first) - Double(origin) - margin)
    let to = Double(end) - Double(origin) + margin
    // Below Int64.max as a Double: a damaged log's times may span more than Int64 holds.
    let limit = 9.2e18
    return (Int64(min(from, limit)), Int64(min(to, limit)))
  }

  /// The SVG document of the whole trace.
  ///
  /// - Parameters:
  ///   - records: the trace, in any order.
  ///   - width: the drawing's width in pixels.
  ///
  /// ```swift
  /// let svg = TraceTimeline.svg(from: records, width: 1600)
  /// ```
  public static func svg(from records: [TraceRecord], width: Int = 1200) -> String {
    svg(from: records, options: Options(width: width))
  }

  /// The SVG document, as `options` say.
  ///
  /// ```swift
  /// let svg = TraceTimeline.svg(from: records, options: .init(from: 0, to: 20_000_000))
  /// ```
  public static func svg(from records: [TraceRecord], options: Options) -> String {
    TimelineDrawing(records: records, spans: spans(from: records), options: options).svg()
  }

  static func color(_ state: Span.State) -> String {
    switch state {
    case .sleeping: "#4a90d9"
    case .waking: "#c8c8c8"
    case .working: "#f5a623"
    }
  }

  static func niceStep(_ raw: Double) -> Double {
    guard raw > 0 else { return 1 }
    var magnitude = 1.0
    while magnitude * 10 <= raw { magnitude *= 10 }
    while magnitude > raw { magnitude /= 10 }
    for factor in [1.0, 2.0, 5.0, 10.0] where magnitude * factor >= raw {
      return magnitude * factor
    }
    return magnitude * 10
  }

  /// `value` for an SVG attribute: at most two decimals, a whole number without any.
  package static func fmt(_ value: Double) -> String {
    let rounded = (value * 100).rounded() / 100
    guard abs(rounded) < 1e15, rounded == rounded.rounded() else { return String(rounded) }
    return String(Int(rounded))
  }

  /// `text` for SVG text and attributes: markup characters as entities, control characters
  /// XML does not allow replaced.
  package static func escape(_ text: String) -> String {
    var result = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
      switch scalar {
      case "&": result.append(contentsOf: "&amp;".unicodeScalars)
      case "<": result.append(contentsOf: "&lt;".unicodeScalars)
      case ">": result.append(contentsOf: "&gt;".unicodeScalars)
      case "\"": result.append(contentsOf: "&quot;".unicodeScalars)
      // XML 1.0 allows no control characters but tab, line feed and carriage return.
      case "\t", "\n", "\r": result.append(scalar)
      case _ where scalar.value < 0x20: result.append("\u{FFFD}")
      default: result.append(scalar)
      }
    }
    return String(result)
  }
}
