import CPeers
import NIOCore
import NIOPosix

/// SwiftNIO's side: `MultiThreadedEventLoopGroup`'s loops. NIO has no call that makes one
/// pass of a loop, so it has no empty-pass figure.
enum NIOSide {
  /// A group of `count` loop threads, made after any CPU restriction so that they inherit it.
  static func withGroup<Result>(
    threads count: Int, _ body: ([any EventLoop]) throws -> Result
  ) throws -> Result {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: count)
    defer { try? group.syncShutdownGracefully() }
    return try body((0..<count).map { _ in group.next() })
  }

  /// What the threads of some loops have used so far.
  static func usage(_ loops: any EventLoop...) throws -> peers_thread_usage {
    try loops.map { try $0.submit { peers_thread_usage_now() }.wait() }.reduce(
      peers_thread_usage(), +)
  }

  /// Nanoseconds to schedule tasks `offsets` seconds ahead on the loop's own thread (as
  /// ours and the C peers' are), then cancel them all.
  static func timerChurn(_ offsets: [Double]) throws -> UInt64 {
    try withGroup(threads: 1) { loops in
      let loop = loops[0]
      return try loop.submit {
        var tasks: [Scheduled<Void>] = []
        tasks.reserveCapacity(offsets.count)
        let start = nanosNow()
        for offset in offsets {
          tasks.append(loop.scheduleTask(in: .nanoseconds(Int64(offset * 1e9))) {})
        }
        for task in tasks { task.cancel() }
        return nanosNow() - start
      }.wait()
    }
  }

  /// Heap bytes per task scheduled far ahead, `count` of them.
  static func timerMemory(_ count: Int) throws -> Double {
    try withGroup(threads: 1) { loops in
      let loop = loops[0]
      return try loop.submit {
        let warm = loop.scheduleTask(in: .hours(2)) {}
        var tasks: [Scheduled<Void>] = []
        tasks.reserveCapacity(count)
        let before = peers_heap_bytes_in_use()
        for index in 0..<count {
          tasks.append(loop.scheduleTask(in: .seconds(3600 + Int64(index))) {})
        }
        let perTimer = peers_heap_growth(before) / Double(count)
        for task in tasks { task.cancel() }
        warm.cancel()
        return perTimer
      }.wait()
    }
  }

  /// Two loops hand `execute` closures back and forth `roundTrips` times.
  static func pingPong(_ roundTrips: Int) throws -> ThreadedSample {
    try withGroup(threads: 2) { loops in
      final class Ball: @unchecked Sendable {
        var remaining: Int
        let done = Latch()
        let a: any EventLoop
        let b: any EventLoop
        init(_ count: Int, _ a: any EventLoop, _ b: any EventLoop) {
          (remaining, self.a, self.b) = (count, a, b)
        }
        func atA() {
          remaining -= 1
          if remaining == 0 { return done.signal() }
          b.execute { self.atB() }
        }
        func atB() { a.execute { self.atA() } }
      }
      let (a, b) = (loops[0], loops[1])
      let ball = Ball(roundTrips, a, b)
      let before = try usage(a, b)
      let start = nanosNow()
      b.execute { ball.atB() }
      try ball.done.wait(for: "NIO's ping-pong")
      let elapsed = nanosNow() - start
      return ThreadedSample(nanoseconds: elapsed, before: before, after: try usage(a, b))
    }
  }
}
