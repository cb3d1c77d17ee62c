import CRunLoopLinux
import Dispatch
import Glibc
import RunLoopCore

/// Two loop threads bouncing a perform request, each side performing the next hop on the
/// other's loop. Both loops run in the default mode, kept alive by an idle source.
public final class PingPongPair: Sendable {
  /// The two threads, ping then pong.
  public let threads: [RunLoopThread]
  /// Their loops.
  public var loops: [EventRunLoop] { threads.map(\.runLoop) }
  private let ball = Ball()

  /// Counts the ball's arrivals at A and tells the waiting test when the last one came.
  private final class Ball: Sendable {
    let remaining = GuardedState(0)
    let finished = DispatchSemaphore(value: 0)

    /// Returns whether the ball goes round again.
    func arrivedAtA() -> Bool {
      let left = remaining.withLock { count -> Int in
        count -= 1
        return count
      }
      if left == 0 { finished.signal() }
      return left > 0
    }
  }

  /// Starts both threads and waits until their loops run. With `onOneCPU`, each thread first
  /// restricts itself to the CPU the caller is running on; a thread that cannot makes this
  /// throw.
  public init(onOneCPU: Bool = false) throws {
    let cpu = crl_current_cpu()
    var started: [RunLoopThread] = []
    do {
      for name in ["ping", "pong"] {
        started.append(
          try startLoopThread(name: name) { _ in
            if onOneCPU, cpu < 0 || crl_run_on_cpu(cpu) != 0 {
              throw RunLoopError.systemCall("sched_setaffinity", errno: errno)
            }
          })
      }
    } catch {
      for thread in started { stopLoopThread(thread) }
      throw error
    }
    threads = started
  }

  /// Sends the ball `count` times round and waits until it is back. With `hold`, each side
  /// keeps the ball that long (busy) before it sends it on, so that it lands while the
  /// other loop has gone to sleep, and polls, rather than while it is still in its pass
  /// (where a wake-up only leaves a note, and the loop does not sleep or poll at all).
  public func bounce(_ count: Int, holdingEachHopFor hold: Duration = .zero) {
    ball.remaining.withLock { $0 = count }
    loops[1].perform { self.atB(hold) }
    ball.finished.wait()
  }

  private func atB(_ hold: Duration) {
    burn(hold)
    loops[0].perform {
      burn(hold)
      if self.ball.arrivedAtA() { self.loops[1].perform { self.atB(hold) } }
    }
  }

  /// Bounces bursts of 500 hops, each held 50 µs (so that the ball lands while the other
  /// loop sleeps, where a loop with a limit polls), until `done` holds, at most 20 bursts:
  /// the process lets only as many loops poll at once as a thread has CPUs, and another
  /// test's loops may hold those places for a while.
  public func bounceHeldBursts(until done: () -> Bool) {
    for _ in 0..<20 where !done() {
      bounce(500, holdingEachHopFor: .microseconds(50))
    }
  }

  /// Cancels both threads, stops their loops and joins them.
  public func stop() {
    for thread in threads { stopLoopThread(thread) }
  }
}
