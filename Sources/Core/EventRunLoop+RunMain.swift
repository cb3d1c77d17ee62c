import CRunLoopLinux
import Glibc

/// An async body on the main loop, for a program whose `main` is synchronous: the supported
/// way to have both the main run loop and `async` code (see RunLoopsAndSwiftConcurrency.md,
/// "The main loop and the main actor").
extension EventRunLoop {
  /// Runs the main loop until `body` has returned, then returns its value or rethrows its
  /// error. Call it from a synchronous `main` (top-level code of `main.swift` without
  /// `await`, or `static func main()` that is not `async`), on the main thread.
  ///
  /// `body` runs on the main actor, whose jobs the main loop runs (it drains
  /// `DispatchQueue.main` in its common modes), so everything the main loop serves, its
  /// sources, timers and ports, runs between the body's suspensions on the same thread.
  ///
  /// ```swift
  /// // main.swift: no top-level `await`.
  /// let answer = try EventRunLoop.runMain {
  ///   try await Task.sleep(for: .milliseconds(10))
  ///   return 42
  /// }
  /// print(answer)
  /// ```
  ///
  /// An `async` main cannot own the main loop: the Swift runtime hands the main thread to
  /// Dispatch's own main-queue loop (which ends the thread) and runs the program on the
  /// main queue. Called from there, or from any thread but the main thread, this throws
  /// instead of hanging.
  ///
  /// - Throws: ``RunLoopError/Code/notOwningThread`` off the main thread, with a message
  ///   that names this pattern; what `body` throws.
  public static func runMain<Value: Sendable>(
    _ body: @escaping @MainActor @Sendable () async throws -> Value
  ) throws -> Value {
    guard crl_current_tid() == getpid() else {
      throw RunLoopError.notOwningThread(mainLoopPattern("EventRunLoop.runMain"))
    }
    let outcome = GuardedState<Result<Value, any Error>?>(nil)
    let main = EventRunLoop.main
    Task { @MainActor in
      let result: Result<Value, any Error>
      do {
        result = .success(try await body())
      } catch {
        result = .failure(error)
      }
      outcome.withLock { $0 = result }
      // Queued, not a plain stop: a stop made while no run is active is forgotten.
      main.perform(name: "runMain.done") { main.stop() }
    }
    while true {
      if let result = outcome.withLock({ $0 }) { return try result.get() }
      try main.runUntilStopped(mode: .default)
    }
  }

  /// The error of a run called off the loop's thread; for the main loop it names the
  /// supported pattern.
  func notOwningThreadToRun() -> RunLoopError {
    guard self === EventRunLoop.main else {
      return .notOwningThread(
        "\(self) belongs to thread \(threadID); thread \(crl_current_tid()) cannot run it")
    }
    return .notOwningThread(Self.mainLoopPattern("running EventRunLoop.main"))
  }

  /// An awaited request on a main loop that can never run (its thread ended under an
  /// `async` main) would wait for ever: this is the error instead, or `nil` when the main
  /// loop can still run.
  func mainLoopUnreachable() -> RunLoopError? {
    guard self === EventRunLoop.main, !isRunning, Self.mainThreadHasExited else { return nil }
    return .notOwningThread(Self.mainLoopPattern("awaiting work on EventRunLoop.main"))
  }

  /// The message of a main-loop call made where it cannot work: names the thread and the
  /// supported pattern.
  static func mainLoopPattern(_ call: String) -> String {
    let thread = crl_current_tid()
    let why =
      mainThreadHasExited
      ? "the main thread has ended (an async main hands it to Dispatch, which ends it)"
      : "thread \(thread) is not the main thread (\(getpid()))"
    return
      "\(call) needs the main thread, but \(why); keep main synchronous (no top-level await,"
      + " no `static func main() async`) and run async code with EventRunLoop.runMain { ... }"
  }

  /// Whether the process's main thread is gone for the main loop: ended, or parked by
  /// Dispatch. Under an `async` main, `dispatch_main` ends the main thread, and libdispatch
  /// then holds the exiting thread in `rt_sigsuspend` for the rest of the process's life.
  static var mainThreadHasExited: Bool {
    let task = "/proc/self/task/\(getpid())"
    guard let stat = firstLine(of: task + "/stat") else { return true }
    // "pid (name) S ...": the state follows the last ')'.
    if let close = stat.lastIndex(of: ")") {
      let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
      if state == "Z" || state == "X" { return true }
    }
    // The first field is the number of the system call the thread is blocked in.
    guard let call = firstLine(of: task + "/syscall")?.split(separator: " ").first,
      let number = Int(call)
    else { return false }
    return number == Int(SYS_rt_sigsuspend)
  }

  private static func firstLine(of path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 512)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
