import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTimers

/// The countdown's state and its three sources on the main run loop: the one-second timer,
/// standard input, and SIGINT/SIGTERM/SIGHUP (a closed terminal ends it like Ctrl-C).
final class CountdownSession: @unchecked Sendable {
  // Unchecked: its `var`s are touched only on the main thread (see below), which the compiler
  // cannot see; what other threads read is immutable.
  enum Status: String {
    case running
    case paused
    case finished = "time is up"
    case stopped
    case interrupted
  }

  private let total: Int
  private let colors: Bool
  private let isTerminal = isatty(0) == 1 && isatty(1) == 1
  // Touched only on the main thread (every call-out runs there).
  private var remaining: Int
  private var status = Status.running
  private var ticker: LoopTimer!
  private var savedTerminal: termios?

  init(seconds: Int, colors: Bool) {
    self.total = seconds
    self.remaining = seconds
    self.colors = colors
  }

  func run() throws -> Int32 {
    let loop = EventRunLoop.current
    enterRawMode()
    defer { restoreTerminal() }

    let signals = try SignalSource(signals: [SIGINT, SIGTERM, SIGHUP], name: "signals") {
      [self] _ in
      finish(.interrupted, loop: loop)
    }
    try signals.add(to: loop, mode: .default)
    defer { signals.invalidate() }

    ticker = try LoopTimer(fireAt: .now + .seconds(1), every: .seconds(1), name: "countdown") {
      [self] _ in tick(loop: loop)
    }
    try loop.add(ticker, mode: .default)
    defer { ticker.invalidate() }

    let keys = DescriptorSource(
      fileDescriptor: 0, ownership: .borrowed, name: "stdin",
      onReadable: { [self] source in readKeys(source, loop: loop) })
    do {
      try keys.add(to: loop, mode: .default)
    } catch {
      StandardStreams.error(
        "runloop-demo: standard input cannot be watched (\(error.message)); keys are off")
    }
    defer { keys.invalidate() }

    StandardStreams.out("Countdown of \(Self.clock(total)). Keys: [p] pause  [r] resume  [q] quit")
    render()
    while status == .running || status == .paused {
      if try loop.run(mode: .default, timeout: nil) == .finished { break }
    }
    if isTerminal { StandardStreams.write(1, "\n") }
    StandardStreams.out("countdown \(status.rawValue) with \(Self.clock(remaining)) left")
    return status == .interrupted ? 130 : 0
  }

  // MARK: - Call-outs (main thread)

  private func tick(loop: EventRunLoop) {
    remaining -= 1
    if remaining <= 0 {
      remaining = 0
      if isTerminal { StandardStreams.write(1, "\u{7}") }  // the workbook plays a sound
      finish(.finished, loop: loop)
    } else {
      render()
    }
  }

  private func readKeys(_ source: DescriptorSource, loop: EventRunLoop) {
    var buffer = [UInt8](repeating: 0, count: 64)
    let count = read(source.fileDescriptor, &buffer, buffer.count)
    if count == 0 {
      // End of input: no more keys, the countdown goes on.
      source.invalidate()
      return
    }
    guard count > 0 else { return }
    for byte in buffer[0..<count] {
      switch byte {
      case UInt8(ascii: "p"), UInt8(ascii: "P"), UInt8(ascii: " "):
        guard status == .running else { continue }
        ticker.suspend()
        status = .paused
        render()
      case UInt8(ascii: "r"), UInt8(ascii: "R"):
        guard status == .paused else { continue }
        ticker.resume()
        status = .running
        render()
      case UInt8(ascii: "q"), UInt8(ascii: "Q"), 3, 4:  // q, Ctrl-C, Ctrl-D in raw mode
        finish(.stopped, loop: loop)
        return
      default:
        continue
      }
    }
  }

  private func finish(_ final: Status, loop: EventRunLoop) {
    guard status == .running || status == .paused else { return }
    status = final
    ticker.invalidate()
    render()
    loop.stop()
  }

  // MARK: - Drawing

  private func render() {
    let line = "⏱  \(Self.clock(remaining))  \(status.rawValue)"
    if isTerminal {
      let colored = colors ? color(for: remaining) + line + "\u{1B}[0m" : line
      StandardStreams.write(1, "\r\u{1B}[2K" + colored)
    } else {
      StandardStreams.out(line)
    }
  }

  /// The workbook turns the screen redder as the end nears; here the text does.
  private func color(for seconds: Int) -> String {
    switch seconds {
    case 20...: return "\u{1B}[0m"
    case 10..<20: return "\u{1B}[33m"
    case 5..<10: return "\u{1B}[31m"
    default: return "\u{1B}[1;31m"
    }
  }

  static func clock(_ seconds: Int) -> String {
    func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(two(seconds / 3600)):\(two(seconds % 3600 / 60)):\(two(seconds % 60))"
  }

  // MARK: - Terminal

  /// Raw-ish mode: keys arrive one by one, unechoed. Signals (Ctrl-C) stay on: they arrive
  /// through the signal source, and the terminal is restored on the way out.
  private func enterRawMode() {
    guard isTerminal else { return }
    var settings = termios()
    guard tcgetattr(0, &settings) == 0 else { return }
    savedTerminal = settings
    settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
    // `c_cc` is a C array, a tuple in Swift: index it as bytes.
    withUnsafeMutableBytes(of: &settings.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    tcsetattr(0, TCSANOW, &settings)
    StandardStreams.write(1, "\u{1B}[?25l")  // hide the cursor
  }

  private func restoreTerminal() {
    guard var saved = savedTerminal else { return }
    tcsetattr(0, TCSANOW, &saved)
    StandardStreams.write(1, "\u{1B}[?25h")
    savedTerminal = nil
  }
}
