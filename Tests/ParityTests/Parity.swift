import Foundation

/// Runs a scenario on Core Foundation's loop and on ours, each on a new thread of its own
/// (so each side starts with a fresh loop), one after the other, and returns both traces.
///
/// Both sides run on threads the scenario's loop owns; nothing of one side's loop is touched
/// by another thread except through the calls CFRunLoop documents as thread-safe (wake up,
/// stop, signal, perform). That keeps ThreadSanitizer's view of CF sound: CF's own code is
/// not instrumented, but every hand-off between threads goes through its pthread mutexes,
/// which ThreadSanitizer does see.
enum Parity {
  struct Traces {
    let cf: [String]
    let ours: [String]
  }

  static func run(_ scenario: @escaping @Sendable (any ParityLoop) -> Void) -> Traces {
    let cf = trace(of: scenario) { CFParityLoop() }
    let ours = trace(of: scenario) { OurParityLoop() }
    return Traces(cf: cf, ours: ours)
  }

  /// Runs `scenario` on a new thread that first creates its side's loop with `make`.
  static func trace(
    of scenario: @escaping @Sendable (any ParityLoop) -> Void,
    on make: @escaping @Sendable () -> any ParityLoop
  ) -> [String] {
    let done = DispatchSemaphore(value: 0)
    let result = ResultBox()
    let thread = Thread {
      let loop = make()
      scenario(loop)
      result.set(loop.trace.log)
      done.signal()
    }
    thread.start()
    done.wait()
    return result.get()
  }
}

/// A trace handed from a scenario's thread to the test's thread.
private final class ResultBox: @unchecked Sendable {
  private let lock = NSLock()
  private var value: [String] = []
  func set(_ trace: [String]) { lock.withLock { value = trace } }
  func get() -> [String] { lock.withLock { value } }
}

/// A value shared between a scenario's call-outs (on one thread, or across threads under its
/// lock).
final class Shared<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var stored: Value
  init(_ value: Value) { stored = value }
  var value: Value {
    get { lock.withLock { stored } }
    set { lock.withLock { stored = newValue } }
  }
  func update<Result>(_ body: (inout Value) -> Result) -> Result {
    lock.withLock { body(&stored) }
  }
}

extension Shared where Value == Bool {
  /// `true` the first time, `false` ever after (for a scenario's "only once").
  func first() -> Bool {
    update { value in
      defer { value = false }
      return value
    }
  }
}

extension Shared where Value == Int {
  /// Adds one and returns the new count.
  func increment() -> Int {
    update { value in
      value += 1
      return value
    }
  }
}
