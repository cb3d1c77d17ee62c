/// Renders a trace as an SVG timeline: one row per thread, showing when each loop slept
/// (blue), woke and ran its own machinery (grey: in a run, neither asleep nor in a call-out)
/// and worked in call-outs (orange), on a common time axis in milliseconds.
///
/// ```swift
/// let svg = TraceTimeline.svg(from: try TraceLog.read(contentsOf: "/tmp/loop.jsonl"))
/// try svg.write(toFile: "/tmp/loop.svg", atomically: true, encoding: .utf8)
/// ```
public enum TraceTimeline {
  /// One span of a thread's time.
  ///
  /// ```swift
  /// let spans = TraceTimeline.spans(from: records)
  /// ```
  public struct Span: Sendable, Hashable {
    /// What the loop was doing.
    ///
    /// ```swift
    /// let asleep = spans.filter { $0.state == .sleeping }
    /// ```
    public enum State: String, Sendable, Hashable {
      /// Asleep in the kernel, waiting for an event.
      case sleeping
      /// In a run, awake, outside call-outs (waking, checking sources and timers).
      case waking
      /// In a call-out into user code.
      case working
    }
    /// The thread.
    ///
    /// ```swift
    /// let tid = span.tid
    /// ```
    public var tid: Int32
    /// What the loop was doing.
    ///
    /// ```swift
    /// let state = span.state
    /// ```
    public var state: State
    /// Start, monotonic nanoseconds.
    ///
    /// ```swift
    /// let start = span.start
    /// ```
    public var start: Int64
    /// End, monotonic nanoseconds.
    ///
    /// ```swift
    /// let end = span.end
    /// ```
    public var end: Int64
    /// A label (the call-out's name).
    ///
    /// ```swift
    /// let label = span.label
    /// ```
    public var label: String

    /// Creates a span.
    ///
    /// ```swift
    /// let span = TraceTimeline.Span(tid: 7, state: .sleeping, start: 0, end: 1_000, label: "")
    /// ```
    public init(tid: Int32, state: State, start: Int64, end: Int64, label: String) {
      self.tid = tid
      self.state = state
      self.start = start
      self.end = end
      self.label = label
    }
  }

  /// The spans of `records`: runs (outermost entry to exit) as waking, with sleeps and
  /// call-outs on top.
  ///
  /// ```swift
  /// let sleeping = TraceTimeline.spans(from: records).filter { $0.state == .sleeping }
  /// ```
  public static func spans(from records: [TraceRecord]) -> [Span] {
    var builder = Builder()
    for record in records { builder.add(record) }
    return builder.spans
  }

  /// The SVG document.
  ///
  /// - Parameter width: the drawing's width in pixels.
  ///
  /// ```swift
  /// let svg = TraceTimeline.svg(from: records, width: 1600)
  /// ```
  public static func svg(from records: [TraceRecord], width: Int = 1200) -> String {
    var builder = Builder()
    for record in records { builder.add(record) }
    return builder.svg(width: width)
  }

  /// Builds a timeline as a trace is read, keeping the spans and the threads but not the
  /// records: memory grows with the spans (one per sleep, call-out and run, about a third
  /// of the records), not with the whole log. `runloop-demo trace timeline` uses it.
  ///
  /// ```swift
  /// var builder = TraceTimeline.Builder()
  /// let reader = try TraceLogReader(path: "trace.jsonl")
  /// while let record = try reader.next() { builder.add(record) }
  /// let svg = builder.svg(width: 1600)
  /// ```
  public struct Builder: Sendable {
    private var collected: [Span] = []
    private var runStart: [Int32: Int64] = [:]
    private var last: [Int32: Int64] = [:]
    private var threads: [(tid: Int32, name: String)] = []
    private var seenThreads = Set<Int32>()
    private var start: Int64?
    private var end: Int64?

    /// Creates an empty builder.
    ///
    /// ```swift
    /// var builder = TraceTimeline.Builder()
    /// ```
    public init() {}

    /// Adds one record.
    ///
    /// ```swift
    /// builder.add(record)
    /// ```
    public mutating func add(_ record: TraceRecord) {
      if seenThreads.insert(record.tid).inserted {
        threads.append((record.tid, "\(record.thread) (tid \(record.tid), loop \(record.loop))"))
      }
      start = min(start ?? record.timestamp, record.timestamp)
      end = max(end ?? record.endTimestamp, record.endTimestamp)
      last[record.tid] = max(last[record.tid] ?? 0, record.endTimestamp)
      switch record.record {
      case .activity where record.activity == "entry" && record.depth == 1:
        runStart[record.tid] = record.timestamp
      case .activity where record.activity == "exit" && record.depth == 1:
        let start = runStart.removeValue(forKey: record.tid) ?? record.timestamp
        collected.append(
          Span(tid: record.tid, state: .waking, start: start, end: record.timestamp, label: "run"))
      case .activity:
        break
      case .callout:
        collected.append(
          Span(
            tid: record.tid, state: .working, start: record.timestamp, end: record.endTimestamp,
            label: "\(record.calloutKind ?? ""): \(record.calloutName ?? "")"))
      case .sleep:
        collected.append(
          Span(
            tid: record.tid, state: .sleeping, start: record.timestamp,
            end: record.endTimestamp, label: "sleep"))
      }
    }

    /// The spans so far, runs still open ending at their thread's last record; runs first,
    /// so that sleeps and call-outs are drawn over them.
    ///
    /// ```swift
    /// let count = builder.spans.count
    /// ```
    public var spans: [Span] {
      var spans = collected
      for (tid, start) in runStart {
        spans.append(
          Span(tid: tid, state: .waking, start: start, end: last[tid] ?? start, label: "run"))
      }
      return spans.sorted {
        ($0.state == .waking ? 0 : 1, $0.start) < ($1.state == .waking ? 0 : 1, $1.start)
      }
    }

    /// The SVG document.
    ///
    /// ```swift
    /// let svg = builder.svg(width: 1200)
    /// ```
    public func svg(width: Int = 1200) -> String {
      let spans = self.spans
      let threads = self.threads
      let start = self.start ?? 0
      let end = Swift.max(self.end ?? 0, start.saturatingAdding(1))
      let labelWidth = 260.0
      let plotWidth = Double(max(width, 400)) - labelWidth - 20
      let rowHeight = 28.0
      let top = 40.0
      let height = top + rowHeight * Double(max(threads.count, 1)) + 50
      // Differences in Double: a damaged log's times may span more than Int64 holds.
      let scale = plotWidth / (Double(end) - Double(start))
      func x(_ time: Int64) -> Double { labelWidth + (Double(time) - Double(start)) * scale }

      var svg = """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(max(width, 400))" height="\(Int(height))" \
        font-family="monospace" font-size="11">
        <title>Run-loop timeline</title>
        <rect x="0" y="0" width="100%" height="100%" fill="white"/>

        """
      let legend: [(String, String)] = [
        ("sleeping", color(.sleeping)), ("waking", color(.waking)), ("working", color(.working)),
      ]
      for (index, item) in legend.enumerated() {
        let lx = labelWidth + Double(index) * 110
        svg += "<rect x=\"\(fmt(lx))\" y=\"10\" width=\"12\" height=\"12\" fill=\"\(item.1)\"/>"
        svg += "<text x=\"\(fmt(lx + 16))\" y=\"20\">\(item.0)</text>\n"
      }
      for (row, thread) in threads.enumerated() {
        let y = top + Double(row) * rowHeight
        svg += "<text x=\"4\" y=\"\(fmt(y + 17))\">\(escape(thread.name))</text>\n"
        svg += "<line x1=\"\(fmt(labelWidth))\" y1=\"\(fmt(y + rowHeight - 2))\" "
        svg +=
          "x2=\"\(fmt(labelWidth + plotWidth))\" y2=\"\(fmt(y + rowHeight - 2))\" stroke=\"#ddd\"/>\n"
        for span in spans where span.tid == thread.tid {
          let inset = span.state == .waking ? 6.0 : 2.0
          let spanWidth = max(0.5, (Double(span.end) - Double(span.start)) * scale)
          svg += "<rect class=\"\(span.state.rawValue)\" x=\"\(fmt(x(span.start)))\" "
          svg += "y=\"\(fmt(y + inset))\" width=\"\(fmt(spanWidth))\" "
          svg += "height=\"\(fmt(rowHeight - 2 * inset - 2))\" fill=\"\(color(span.state))\">"
          svg +=
            "<title>\(escape(span.label)) \(fmt((Double(span.end) - Double(span.start)) / 1e6)) ms</title>"
          svg += "</rect>\n"
        }
      }
      // A time axis with about ten ticks.
      let axisY = top + rowHeight * Double(max(threads.count, 1)) + 10
      let totalMilliseconds = (Double(end) - Double(start)) / 1e6
      let step = niceStep(totalMilliseconds / 10)
      var tick = 0.0
      while tick <= totalMilliseconds {
        let tx = labelWidth + tick * 1e6 * scale
        svg += "<line x1=\"\(fmt(tx))\" y1=\"\(fmt(axisY))\" x2=\"\(fmt(tx))\" "
        svg += "y2=\"\(fmt(axisY + 5))\" stroke=\"black\"/>"
        svg += "<text x=\"\(fmt(tx))\" y=\"\(fmt(axisY + 18))\" text-anchor=\"middle\">"
        svg += "\(fmt(tick)) ms</text>\n"
        tick += step
      }
      svg += "</svg>\n"
      return svg
    }
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

  static func fmt(_ value: Double) -> String {
    let rounded = (value * 100).rounded() / 100
    guard abs(rounded) < 1e15, rounded == rounded.rounded() else { return String(rounded) }
    return String(Int(rounded))
  }

  static func escape(_ text: String) -> String {
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
