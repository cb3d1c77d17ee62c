import CPeers
import Dispatch
import Glibc

/// Nanoseconds on CLOCK_MONOTONIC, the clock the C peers' side reads too.
func nanosNow() -> UInt64 {
  var spec = timespec()
  clock_gettime(CLOCK_MONOTONIC, &spec)
  return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// The median of some samples (NaN for none).
func median(_ values: [Double]) -> Double {
  let sorted = values.filter { !$0.isNaN }.sorted()
  guard !sorted.isEmpty else { return .nan }
  let middle = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// A one-shot signal from one thread to another.
final class Latch: Sendable {
  private let semaphore = DispatchSemaphore(value: 0)
  func signal() { semaphore.signal() }

  /// Waits for the signal; throws when it has not come within a minute (a lost wake-up or
  /// a side that failed), so that the bench stops with an error naming the work, and a
  /// failing exit status, instead of hanging.
  func wait(for work: String) throws {
    guard semaphore.wait(timeout: .now() + .seconds(60)) == .success else {
      throw SideFailure(description: "\(work) did not finish within 60 s")
    }
  }
}

/// Round trips per second of `roundTrip`, awaited `count` times in a row by a task; the
/// calling thread waits for the task (see ``Latch/wait(for:)``), and a round trip that
/// throws ends the measurement with its error.
func awaitedRate(
  _ count: Int, of work: String, _ roundTrip: @escaping @Sendable () async throws -> Void
) throws -> Double {
  let done = Latch()
  nonisolated(unsafe) var elapsed: UInt64 = 0
  nonisolated(unsafe) var failure: (any Error)?
  Task {
    let start = nanosNow()
    do {
      for _ in 0..<count { try await roundTrip() }
    } catch {
      failure = error
    }
    elapsed = nanosNow() - start
    done.signal()
  }
  try done.wait(for: work)
  if let failure { throw failure }
  return Double(count) / (Double(elapsed) / 1e9)
}

/// A measured side that never finished, or whose work failed: the bench stops with it.
struct SideFailure: Error, CustomStringConvertible {
  let description: String
}

/// Runs `body` on a new thread and waits for it: each side's single-thread work starts on a
/// fresh thread, so no side inherits another's loop, arena or caches on the bench's thread.
func onNewThread<Value>(_ body: @escaping () throws -> Value) throws -> Value {
  nonisolated(unsafe) var outcome: Result<Value, any Error>?
  let thread = JoinableThread { outcome = Result { try body() } }
  thread.join()
  return try outcome!.get()
}

/// A bare pthread running a closure, joined by its creator.
final class JoinableThread: @unchecked Sendable {
  private var handle = pthread_t()
  private let body: () -> Void

  init(_ body: @escaping () -> Void) {
    self.body = body
    let context = Unmanaged.passRetained(self).toOpaque()
    let status = pthread_create(
      &handle, nil,
      { context in
        Unmanaged<JoinableThread>.fromOpaque(context!).takeRetainedValue().body()
        return nil
      }, context)
    precondition(status == 0, "pthread_create failed: \(status)")
  }

  func join() { pthread_join(handle, nil) }
}

/// What one run of cross-thread work measured.
struct ThreadedSample {
  /// Wall time of the run.
  var nanoseconds: Double
  /// CPU time of the loop threads during the run.
  var cpuNanoseconds: Double
  /// malloc-family calls of the loop threads during the run.
  var allocations: Double

  /// A run of `nanoseconds` whose loop threads' usage went from `before` to `after` (each the
  /// sum over the threads).
  init(nanoseconds: UInt64, before: peers_thread_usage, after: peers_thread_usage) {
    self.nanoseconds = Double(nanoseconds)
    cpuNanoseconds = Double(after.cpu_nanoseconds &- before.cpu_nanoseconds)
    allocations = Double(after.allocations &- before.allocations)
  }

  init(_ result: peers_ping_pong_result) {
    nanoseconds = Double(result.nanoseconds)
    cpuNanoseconds = Double(result.cpu_nanoseconds)
    allocations = Double(result.allocations)
  }
}

/// The sum of some threads' usage.
func + (a: peers_thread_usage, b: peers_thread_usage) -> peers_thread_usage {
  peers_thread_usage(
    cpu_nanoseconds: a.cpu_nanoseconds + b.cpu_nanoseconds,
    allocations: a.allocations + b.allocations)
}

/// Runs each side's measurement once per round, the first side rotating from round to round,
/// so that a change in machine load reaches every side alike and no side always runs right
/// after the same other one. Returns each side's samples in round order.
func interleaved<Sample>(
  rounds: Int, sides: [Peer], _ measure: (Peer) throws -> Sample
) rethrows -> [Peer: [Sample]] {
  var samples: [Peer: [Sample]] = [:]
  for round in 0..<rounds {
    for step in 0..<sides.count {
      let side = sides[(round + step) % sides.count]
      samples[side, default: []].append(try measure(side))
    }
  }
  return samples
}
