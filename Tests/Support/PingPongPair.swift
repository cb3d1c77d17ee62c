import CRunLoopLinux
import Dispatch
import RunLoopCore

/// Two loop threads bouncing work: by default a perform request, each side performing the
/// next hop on the other's loop. Both loops run in the default mode, kept alive by an idle
/// source. `onOneCPU` restricts both threads to CPU 0 before their loops run.
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

  /// `setUpA` and `setUpB` add what bounces instead of perform requests; each gets a
  /// function to call on every arrival at A, which returns whether to go on.
  public init(
    onOneCPU: Bool = false,
    setUpA: (@Sendable (EventRunLoop, @escaping @Sendable () -> Bool) throws -> Void)? = nil,
    setUpB: (@Sendable (EventRunLoop, @escaping @Sendable () -> Bool) throws -> Void)? = nil
  ) throws {
    let ready = DispatchSemaphore(value: 0)
    let ball = ball
    threads = [("ping", setUpA), ("pong", setUpB)].map { name, setUp in
      RunLoopThread(name: name) { thread in
        if onOneCPU { precondition(crl_run_on_cpu(0) == 0) }
        try thread.runLoop.add(CustomInputSource {}, mode: .default)
        try setUp?(thread.runLoop, ball.arrivedAtA)
        ready.signal()
        while !thread.isCancelled {
          _ = try thread.runLoop.run(mode: .default, timeout: .seconds(1))
        }
      }
    }
    for thread in threads { try thread.start() }
    for _ in threads { ready.wait() }
  }

  /// Sends the ball `count` times round (with perform requests unless `serve` starts a
  /// ball of another kind) and waits until it is back.
  public func bounce(_ count: Int, serve: (() -> Void)? = nil) {
    ball.remaining.withLock { $0 = count }
    if let serve { serve() } else { loops[1].perform { self.atB() } }
    ball.finished.wait()
  }

  private func atB() {
    loops[0].perform {
      if self.ball.arrivedAtA() { self.loops[1].perform { self.atB() } }
    }
  }

  /// Cancels both threads, stops their loops and joins them.
  public func stop() {
    for thread in threads {
      thread.cancel()
      thread.runLoop.stop()
    }
    for thread in threads { try? thread.join() }
  }
}
