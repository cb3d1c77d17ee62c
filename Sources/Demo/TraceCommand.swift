import ArgumentParser
import Foundation
import Glibc
import RunLoopCore
import RunLoopTracing

/// `runloop-demo trace`: tools over a JSON Lines trace.
struct TraceCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "trace",
    abstract: "Summarise a JSON log, or turn it into a Chrome/Perfetto trace or an SVG timeline.",
    discussion: """
      The JSON log (runloop-demo run --json-log PATH) has one record per activity, call-out \
      and sleep of every loop (schema: Docs/RunLoopGuide.docc/TraceSchema.md).

        runloop-demo trace summary runloop-trace.jsonl
        runloop-demo trace export runloop-trace.jsonl --chrome trace.json   (open at ui.perfetto.dev)
        runloop-demo trace export server.jsonl client.jsonl -o both.json    (processes together)
        runloop-demo trace timeline runloop-trace.jsonl --svg timeline.svg  (open in a browser)
        runloop-demo trace timeline runloop-trace.jsonl --svg slow.svg --around-slowest 3
        runloop-demo trace pass runloop-trace.jsonl --svg pass.svg --iteration 4  (one pass)
      """,
    subcommands: [Summary.self, Export.self, Timeline.self, Pass.self]
  )

  /// Opens a trace for streaming, turning a failure into a message for people that names
  /// the failing call's own error.
  static func reader(at path: String) throws -> TraceLogReader {
    ForegroundSignals.restoreDefault()
    do {
      return try TraceLogReader(path: path)
    } catch {
      throw DemoError("cannot read '\(path)': \(reason(error))")
    }
  }

  /// Reads every record of a trace into memory, skipping bad lines (the timeline needs
  /// them all: its window and its slowest call-out are found over the whole trace).
  static func records(at path: String) throws -> [TraceRecord] {
    let reader = try reader(at: path)
    var records: [TraceRecord] = []
    try forEach(reader) { records.append($0) }
    try finish(reader)
    return records
  }

  /// Reads every record of `reader` into `body`.
  static func forEach(_ reader: TraceLogReader, _ body: (TraceRecord) throws -> Void) throws {
    while true {
      let record: TraceRecord?
      do {
        record = try reader.next()
      } catch {
        throw DemoError("cannot read '\(reader.name)': \(reason(error))")
      }
      guard let record else { return }
      try body(record)
    }
  }

  /// After reading: an error when the file held no record (empty, or not a trace at all);
  /// otherwise a note on standard error for the lines skipped.
  static func finish(_ reader: TraceLogReader) throws {
    guard reader.records > 0 else {
      if let note = reader.badLineSummary {
        throw DemoError("'\(reader.name)' is not a runloop JSON log: \(note)")
      }
      throw DemoError("'\(reader.name)' is empty: it holds no trace records")
    }
    if let note = reader.badLineSummary {
      StandardStreams.error("runloop-demo: '\(reader.name)': \(note)")
    }
  }

  /// The `errno` text of a failed call, or the error's message.
  static func reason(_ error: RunLoopError) -> String {
    error.systemError.map { String(cString: strerror($0)) } ?? error.message
  }

  /// Writes `data` to `path`, turning a failure into a message for people.
  static func write(_ data: Data, to path: String) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else {
      throw DemoError("cannot write '\(path)': \(String(cString: strerror(errno)))")
    }
    defer { close(descriptor) }
    // write(2) reads the bytes in place.
    let written = data.withUnsafeBytes { buffer -> Int in
      var offset = 0
      while offset < buffer.count {
        let count = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        if count < 0 {
          if errno == EINTR { continue }
          return -1
        }
        offset += count
      }
      return offset
    }
    guard written == data.count else {
      throw DemoError("cannot write '\(path)': \(String(cString: strerror(errno)))")
    }
  }

  struct Summary: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Per loop: passes, % asleep, timer lateness and the call-outs that took longest.")

    @Argument(help: ArgumentHelp("The JSON log.", valueName: "file"))
    var file: String

    @Option(name: .long, help: "How many call-outs to list per loop.")
    var top: Int = 5

    func validate() throws {
      guard top >= 0 else { throw ValidationError("--top cannot be negative") }
    }

    func run() throws {
      let reader = try TraceCommand.reader(at: file)
      var builder = TraceSummary.Builder()
      // The run ids, a few of them: a damaged log could have one per line.
      var runs = Set<String>()
      var moreRuns = false
      try TraceCommand.forEach(reader) { record in
        builder.add(record)
        if runs.count < 20 || runs.contains(record.run) {
          runs.insert(record.run)
        } else {
          moreRuns = true
        }
      }
      try TraceCommand.finish(reader)
      let names = runs.sorted().joined(separator: ", ") + (moreRuns ? " and more" : "")
      StandardStreams.out(
        "\(reader.records) records, run id\(runs.count == 1 ? "" : "s") \(names)")
      StandardStreams.write(1, builder.summary(top: top).text)
    }
  }

  struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Write a Chrome Trace Event file (opens in ui.perfetto.dev or chrome://tracing).",
      discussion: """
        Several logs (one per process, say a server's and its clients') make one picture: a \
        track per process, and flow arrows from each call-out to the call-outs it caused, \
        in its own process or, through named ports, in another.

          runloop-demo trace export server.jsonl client.jsonl -o both.json
        """)

    @Argument(help: ArgumentHelp("The JSON logs, one or more.", valueName: "file"))
    var files: [String]

    @Option(
      name: [.customLong("chrome"), .customShort("o"), .customLong("output")],
      help: ArgumentHelp("Where to write the Chrome trace.", valueName: "out.json"))
    var chrome: String

    func validate() throws {
      guard !files.isEmpty else { throw ValidationError("name at least one JSON log") }
    }

    func run() throws {
      // Each log opens, once, before anything is written, so a missing one is named as such
      // (and a pipe is read by the one reader it has).
      let logs = try files.map { try TraceCommand.reader(at: $0) }
      let result: (events: Int, flows: Int, causesNotFound: Int)
      do {
        result = try ChromeTrace.write(from: logs, toFileAt: chrome)
      } catch {
        let failedLog = files.first { error.message.hasPrefix("read(\($0))") }
        let failedCall = failedLog.map { "read '\($0)'" } ?? "write '\(chrome)'"
        throw DemoError("cannot \(failedCall): \(TraceCommand.reason(error))")
      }
      do {
        for reader in logs { try TraceCommand.finish(reader) }
      } catch {
        unlink(chrome)
        throw error
      }
      if result.causesNotFound > 0 {
        StandardStreams.error(
          "runloop-demo: \(result.causesNotFound) call-out(s) name a cause not found in "
            + (files.count == 1 ? "this log" : "these logs")
            + " (or more than 65,536 call-outs away): no arrow drawn for them")
      }
      let records = logs.reduce(0) { $0 + $1.records }
      let from = files.count == 1 ? "" : " from \(files.count) logs"
      let arrows =
        result.flows == 0 ? "" : ", \(result.flows) cause arrow\(result.flows == 1 ? "" : "s")"
      StandardStreams.out(
        "wrote \(chrome): \(records) records\(from) as \(result.events) Chrome trace events"
          + arrows)
    }
  }

  struct Timeline: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract:
        "Draw an SVG timeline: a row per thread, runs shaded by mode, sleeps, labelled call-outs, stalls, arrows from causes to effects.",
      discussion: """
        Times are from the trace's first record, as on the picture's axis: seconds or with a \
        unit (0.5, 120ms, 1m2s).

          runloop-demo trace timeline t.jsonl --svg all.svg
          runloop-demo trace timeline t.jsonl --svg zoom.svg --from 1.2 --to 1250ms
          runloop-demo trace timeline t.jsonl --svg slow.svg --around-slowest 3
        """)

    @Argument(help: ArgumentHelp("The JSON log.", valueName: "file"))
    var file: String

    @Option(name: .long, help: ArgumentHelp("Where to write the SVG.", valueName: "out.svg"))
    var svg: String

    @Option(name: .long, help: "Width of the picture in pixels (200 to 20000).")
    var width: Int = 1200

    @Option(name: .long, help: ArgumentHelp("Start of the window.", valueName: "time"))
    var from: String?

    @Option(name: .long, help: ArgumentHelp("End of the window.", valueName: "time"))
    var to: String?

    @Option(
      name: .customLong("around-slowest"),
      help: ArgumentHelp("Zoom in on the N slowest call-outs.", valueName: "N"))
    var aroundSlowest: Int?

    @Option(
      name: .customLong("stall-threshold"),
      help: ArgumentHelp("Mark call-outs at least this long as stalls.", valueName: "duration"))
    var stallThreshold: DurationArgument = DurationArgument(.milliseconds(50))

    func validate() throws {
      guard (200...20_000).contains(width) else {
        throw ValidationError("--width must be between 200 and 20000, not \(width)")
      }
      for (name, value) in [("--from", from), ("--to", to)] {
        if let value, Self.nanoseconds(value) == nil {
          throw ValidationError("\(name) takes a time such as 1.5, 120ms or 1m2s, not '\(value)'")
        }
      }
      if let from, let to, let start = Self.nanoseconds(from), let end = Self.nanoseconds(to),
        end <= start
      {
        throw ValidationError("--to (\(to)) must be after --from (\(from))")
      }
      if let aroundSlowest {
        guard aroundSlowest >= 1 else {
          throw ValidationError("--around-slowest needs at least 1, not \(aroundSlowest)")
        }
        guard from == nil && to == nil else {
          throw ValidationError("--around-slowest chooses the window: leave out --from and --to")
        }
      }
    }

    /// `text` as nanoseconds (0 allowed), or `nil` when it is not a time.
    static func nanoseconds(_ text: String) -> Int64? {
      guard let seconds = DurationArgument.seconds(of: text), seconds.isFinite, seconds >= 0,
        seconds < 9e9
      else { return nil }
      return Int64((seconds * 1e9).rounded())
    }

    func run() throws {
      let records = try TraceCommand.records(at: file)
      var options = TraceTimeline.Options(
        width: width, from: from.flatMap(Self.nanoseconds), to: to.flatMap(Self.nanoseconds),
        stallThreshold: Int64(stallThreshold.seconds * 1e9))
      if let aroundSlowest {
        guard let window = TraceTimeline.window(aroundSlowest: aroundSlowest, in: records) else {
          throw DemoError("'\(file)' has no call-out to zoom in on")
        }
        options.from = window.from
        options.to = window.to
      }
      let text = TraceTimeline.svg(from: records, options: options)
      try TraceCommand.write(Data(text.utf8), to: svg)
      let window =
        options.from == nil && options.to == nil
        ? ""
        : " (window \(milliseconds(nanoseconds: options.from ?? 0)) ms to "
          + "\(options.to.map { milliseconds(nanoseconds: $0) + " ms" } ?? "end"))"
      StandardStreams.out(
        "wrote \(svg): \(TraceTimeline.spans(from: records).count) spans\(window)")
    }
  }

  struct Pass: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract:
        "Draw one pass of a loop as the guide's sequence of events: the ten steps as lanes, its records down the page.",
      discussion: """
        Each record's mark is in the lane of the step the loop reported for it (the log's \
        `step`); a call-out that ran the loop nested is a frame around the nested run. \
        Without --iteration: the first pass that holds a nested run, else the first that \
        slept and handled what woke it.

          runloop-demo scenario nested-runs --json-log nested.jsonl
          runloop-demo trace pass nested.jsonl --svg pass.svg
          runloop-demo trace pass nested.jsonl --svg pass9.svg --iteration 9
        """)

    @Argument(help: ArgumentHelp("The JSON log.", valueName: "file"))
    var file: String

    @Option(name: .long, help: ArgumentHelp("Where to write the SVG.", valueName: "out.svg"))
    var svg: String

    @Option(name: .long, help: ArgumentHelp("The pass counter at its step 2.", valueName: "N"))
    var iteration: UInt64?

    @Option(
      name: .long,
      help: ArgumentHelp("The loop id (default: the log's first loop).", valueName: "id"))
    var loop: UInt64?

    func run() throws {
      let records = try TraceCommand.records(at: file)
      guard let pass = LoopPass.find(in: records, iteration: iteration, loop: loop) else {
        let passes = LoopPass.iterations(in: records, loop: loop)
        let which = loop.map { "loop \($0)" } ?? "the first loop"
        guard let first = passes.first, let last = passes.last else {
          throw DemoError("'\(file)' has no pass of \(which)")
        }
        throw DemoError(
          "'\(file)' has no pass \(iteration ?? 0) of \(which): its passes are \(first) to \(last)")
      }
      let drawing = PassDrawing(pass: pass)
      try TraceCommand.write(Data(drawing.svg().utf8), to: svg)
      let steps = drawing.rows.filter { !$0.isEnd }.compactMap(\.step)
      var path: [Int] = []
      for step in steps where path.last != step { path.append(step) }
      StandardStreams.out(
        "wrote \(svg): pass \(pass.iteration) of loop \(pass.loop), \(pass.records.count) records, "
          + "steps " + path.map(String.init).joined(separator: " "))
    }
  }
}
