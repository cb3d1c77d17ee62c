import CRunLoopLinux
import Glibc
import RunLoopCore

/// A real second process: the package's `RunLoopTestHelper` executable (built next to the
/// test bundle), started with `posix_spawn`, its standard output read line by line.
public final class HelperProcess: @unchecked Sendable {
  /// The helper's process id.
  public let pid: pid_t
  private let output: Int32
  // Loop-free, test-thread-only buffer of what the helper printed and nobody read yet.
  private var pending: [UInt8] = []
  private var reaped: Int32?

  /// In a coverage run, where the instrumented helper writes its profile: the test binary's
  /// own `LLVM_PROFILE_FILE`, whose pattern gives each process a file of its own in the
  /// folder `swift test` merges. Without it the helper's counts would go to a
  /// `default.profraw` in the working directory, and its code would count as never run.
  static let profileEnvironment: [String] = {
    guard let pattern = getenv("LLVM_PROFILE_FILE") else { return [] }
    return ["LLVM_PROFILE_FILE=" + String(cString: pattern)]
  }()

  /// The helper executable: next to the running test binary (from /proc/self/exe).
  public static var helperPath: String? { path(of: "RunLoopTestHelper") }

  /// The path of the package's executable `name`, next to the running test binary.
  public static func path(of name: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    let executable = String(
      decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    var directory = executable[..<(executable.lastIndex(of: "/") ?? executable.endIndex)]
    // The test binary may sit inside a bundle directory; walk up until the helper is there.
    while !directory.isEmpty {
      let candidate = String(directory) + "/" + name
      if access(candidate, X_OK) == 0 { return candidate }
      directory = directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)]
    }
    return nil
  }

  /// Starts the helper (or the package's executable `executable`) with `arguments`; with
  /// `setprivUser`, under that uid and gid via `setpriv` (root only); `environment` adds
  /// `NAME=value` entries to the child's (otherwise only `PATH`).
  public init(
    _ arguments: [String], setprivUser: uid_t? = nil, executable: String = "RunLoopTestHelper",
    environment extraEnvironment: [String] = []
  ) throws {
    guard let helper = Self.path(of: executable) else {
      throw RunLoopError.invalidState("\(executable) not found next to the test binary")
    }
    var command: [String] = [helper] + arguments
    if let user = setprivUser {
      let prefix: [String] = [
        "/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user)", "--clear-groups",
      ]
      command = prefix + command
    }
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw RunLoopError.systemCall("pipe", errno: errno) }
    _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
    posix_spawn_file_actions_addclose(&actions, fds[1])
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // Start with no blocked signals, whatever the spawning thread blocks.
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
    let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
    let environment: [UnsafeMutablePointer<CChar>?] =
      (["PATH=/usr/bin:/bin"] + Self.profileEnvironment + extraEnvironment).map { strdup($0) }
      + [nil]
    defer {
      for pointer in argv + environment { free(pointer) }
    }
    var child: pid_t = 0
    let status = posix_spawn(&child, command[0], &actions, &attributes, argv, environment)
    close(fds[1])
    guard status == 0 else {
      close(fds[0])
      throw RunLoopError.systemCall("posix_spawn(\(command[0]))", errno: status)
    }
    pid = child
    output = fds[0]
  }

  deinit {
    if reaped == nil {
      kill(pid, SIGKILL)
      var status: Int32 = 0
      waitpid(pid, &status, 0)
    }
    close(output)
  }

  /// The next line the helper prints, or `nil` when it does not print one in time.
  public func readLine(timeout: Duration = .seconds(10)) -> String? {
    let deadline = ContinuousClock.now + timeout
    while true {
      if let newline = pending.firstIndex(of: 10) {
        let line = String(decoding: pending[..<newline], as: UTF8.self)
        pending.removeFirst(newline + 1)
        return line
      }
      let remaining = ContinuousClock.now.duration(to: deadline)
      guard remaining > .zero else { return nil }
      var entry = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
      let milliseconds = Int32(remaining.components.seconds * 1000 + 1)
      guard poll(&entry, 1, milliseconds) > 0 else { continue }
      var chunk = [UInt8](repeating: 0, count: 1024)
      let count = read(output, &chunk, chunk.count)
      guard count > 0 else { return nil }
      pending += chunk[0..<count]
    }
  }

  /// Waits for the helper to exit and returns its exit code (128 + n for signal n), or
  /// `nil` when it is still running at the timeout.
  public func waitForExit(timeout: Duration = .seconds(10)) -> Int32? {
    if let reaped { return reaped }
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      var status: Int32 = 0
      if waitpid(pid, &status, WNOHANG) == pid {
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        reaped = code
        return code
      }
      usleep(2000)
    }
    return nil
  }

  /// Sends `signal` to the helper.
  public func signal(_ signal: Int32) { kill(pid, signal) }

  /// Sends `signal` to the helper's thread `tid` only (`tgkill`). Returns whether it was sent.
  @discardableResult
  public func signal(_ signal: Int32, thread tid: pid_t) -> Bool {
    crl_signal_thread(pid, tid, signal) == 0
  }
}
