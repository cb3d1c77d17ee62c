import Foundation
import Glibc
import RunLoopCore
import Testing

/// A pseudo-terminal: the demo gets the secondary side as its standard input, output and
/// error (so `isatty` is true and it switches to raw mode); the test types on the primary
/// side and reads what the demo draws.
final class PseudoTerminal: @unchecked Sendable {
  let primary: Int32
  let secondary: Int32
  private let screen = GuardedState<[UInt8]>([])
  private let reading = DispatchGroup()

  init() throws {
    // posix_openpt/grantpt/unlockpt/ptsname are not in Swift's Glibc module; they are thin
    // wrappers over /dev/ptmx and two ioctls. The ioctl numbers are function-like macros
    // (_IOW/_IOR) that Swift does not import: TIOCSPTLCK = _IOW('T', 0x31, int) and
    // TIOCGPTN = _IOR('T', 0x30, unsigned int), the same on x86_64 and arm64.
    let lockRequest: UInt = 0x4004_5431
    let numberRequest: UInt = 0x8004_5430
    primary = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
    var unlock: Int32 = 0
    var number: UInt32 = 0
    guard primary >= 0, ioctl(primary, lockRequest, &unlock) == 0,
      ioctl(primary, numberRequest, &number) == 0
    else { throw POSIXError(.ENXIO) }
    secondary = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard secondary >= 0 else { throw POSIXError(.ENXIO) }
    reading.enter()
    Thread { [self] in
      var buffer = [UInt8](repeating: 0, count: 1024)
      while true {
        let count = read(primary, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        screen.withLock { $0 += buffer[0..<count] }
      }
      reading.leave()
    }.start()
  }

  /// Everything the program wrote so far.
  var text: String { String(decoding: screen.withLock { $0 }, as: UTF8.self) }

  func type(_ keys: String) {
    _ = keys.utf8CString.withUnsafeBufferPointer { write(primary, $0.baseAddress, keys.utf8.count) }
  }

  func waitFor(_ needle: String, after offset: Int = 0, timeout: Duration = .seconds(10)) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      if String(text.dropFirst(offset)).contains(needle) { return true }
      usleep(20_000)
    }
    return false
  }

  /// Whether the terminal is back in canonical mode with echo (what a shell expects).
  var isCooked: Bool {
    var settings = termios()
    guard tcgetattr(secondary, &settings) == 0 else { return false }
    return settings.c_lflag & tcflag_t(ICANON) != 0 && settings.c_lflag & tcflag_t(ECHO) != 0
  }

  func close() {
    Glibc.close(secondary)
    Glibc.close(primary)
    _ = reading.wait(timeout: .now() + 2)
  }
}

@Suite("runloop-demo countdown")
struct CountdownCommandTests {
  @Test func countdownPausesAndResumesInAPseudoTerminalAndRestoresIt() throws {
    let terminal = try PseudoTerminal()
    defer { terminal.close() }
    #expect(terminal.isCooked)
    let demo = try DemoProcess(["countdown", "2", "--no-color"], terminal: terminal.secondary)
    #expect(terminal.waitFor("00:00:02  running"))
    terminal.type("p")
    #expect(terminal.waitFor("00:00:02  paused"))
    // While paused the one-second timer is suspended: nothing is drawn for 1.5 s.
    let pausedAt = terminal.text.count
    usleep(1_500_000)
    let whilePaused = String(terminal.text.dropFirst(pausedAt))
    #expect(
      !whilePaused.contains("00:00:01"), "drawn while paused: \(whilePaused.debugDescription)")
    terminal.type("r")
    #expect(terminal.waitFor("00:00:02  running", after: pausedAt))
    #expect(terminal.waitFor("00:00:01  running", after: pausedAt))
    #expect(terminal.waitFor("countdown time is up"))
    let result = demo.wait(timeout: .seconds(10))
    #expect(result.exitedNormally && result.status == 0)
    #expect(terminal.isCooked, "the terminal was left in raw mode")
  }

  @Test func qStopsTheCountdownEarlyAndExitsZero() throws {
    let terminal = try PseudoTerminal()
    defer { terminal.close() }
    let demo = try DemoProcess(["countdown", "30"], terminal: terminal.secondary)
    #expect(terminal.waitFor("running"))
    terminal.type("q")
    let result = demo.wait(timeout: .seconds(10))
    #expect(result.exitedNormally && result.status == 0)
    #expect(terminal.waitFor("countdown stopped"))
    #expect(terminal.isCooked)
  }

  @Test func aSignalEndsTheCountdownWith130AndStillRestoresTheTerminal() throws {
    let terminal = try PseudoTerminal()
    defer { terminal.close() }
    let demo = try DemoProcess(["countdown", "30"], terminal: terminal.secondary)
    #expect(terminal.waitFor("running"))
    #expect(!terminal.isCooked, "the countdown did not switch the terminal to raw mode")
    demo.send(SIGTERM)
    let result = demo.wait(timeout: .seconds(10))
    #expect(result.exitedNormally && result.status == 130)
    #expect(terminal.waitFor("countdown interrupted"))
    #expect(terminal.isCooked)
  }
}
