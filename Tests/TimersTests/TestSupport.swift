import Glibc
import RunLoopCore
@_exported import RunLoopTestSupport

@testable import RunLoopTimers

/// A thread-safe list of strings, for recording the order of call-outs.
final class EventLog: Sendable {
  private let entries = GuardedState<[String]>([])

  func append(_ entry: String) { entries.withLock { $0.append(entry) } }

  var all: [String] { entries.withLock { $0 } }

  var count: Int { entries.withLock { $0.count } }
}

/// A thread-safe counter.
final class Counter: Sendable {
  private let value = GuardedState(0)

  @discardableResult
  func increment() -> Int {
    value.withLock {
      $0 += 1
      return $0
    }
  }

  var count: Int { value.withLock { $0 } }
}

/// Sleeps the calling thread (not a run loop) for `duration`.
func pause(_ duration: Duration) {
  let (seconds, attoseconds) = duration.components
  usleep(UInt32(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
}

/// A timer far in the future that keeps a mode from being empty.
func keepAlive(_ loop: EventRunLoop, mode: LoopMode) throws -> LoopTimer {
  let timer = try LoopTimer(fireAt: .now + .seconds(3600), name: "keepAlive") { _ in }
  try loop.add(timer, mode: mode)
  return timer
}

/// Whether the scheduler of `loop` has well-formed heaps.
func heapsAreConsistent(_ loop: EventRunLoop) -> Bool {
  TimerScheduler.of(loop)?.state.withLock { $0.isConsistent() } ?? false
}

/// How many timers are in `mode`'s heaps of `loop`'s scheduler (0 when it has none).
func scheduledCount(_ loop: EventRunLoop, mode: LoopMode) -> Int {
  TimerScheduler.existing(of: loop)?.state.withLock { $0.count(in: mode) } ?? 0
}

/// How many timers with tolerance are linked in `mode` of `loop`'s scheduler (the queues
/// count them: the rule for tolerance needs the walk only where they are).
func tolerantCount(_ loop: EventRunLoop, mode: LoopMode) -> Int {
  TimerScheduler.existing(of: loop)?.state.withLock { state in
    state.queues.reduce(0) { $0 + ($1.modes.contains(mode) ? $1.tolerantCount : 0) }
  } ?? 0
}

/// How many delayed performs `loop`'s scheduler keeps under `key` (0 when it has none).
func keptDelayedPerforms(_ loop: EventRunLoop, key: String) -> Int {
  TimerScheduler.existing(of: loop)?.state.withLock { $0.delayedByKey[key]?.count ?? 0 } ?? 0
}

/// Whether `loop` has a timer scheduler plugged in.
func hasTimerScheduler(_ loop: EventRunLoop) -> Bool {
  TimerScheduler.existing(of: loop) != nil
}

/// An object whose lifetime tests watch.
final class Sentinel: Sendable {}

/// A weak reference readable from any thread, to see when an object is freed.
final class WeakBox: @unchecked Sendable {
  // Guards `value`.
  private let lock = GuardedState(0)
  private weak var value: AnyObject?

  func set(_ object: AnyObject) { lock.withLock { _ in value = object } }

  var isNil: Bool { lock.withLock { _ in value == nil } }
}
