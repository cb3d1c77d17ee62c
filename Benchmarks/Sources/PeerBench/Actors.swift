import CPeers
import NIOCore
import NIOPosix

/// An actor pinned to a loop through the executor it is given: the same type serves our
/// loops and NIO's, so the two sides of a row run the same actor code.
actor Player {
  nonisolated let unownedExecutor: UnownedSerialExecutor

  init(executor: UnownedSerialExecutor) { unownedExecutor = executor }

  /// Hits taken: state of the actor, so that reaching it needs the actor's executor (a call
  /// of an actor method that touches no state can be optimized into no hop at all).
  private var hits = 0

  /// Awaits `other` `count` times (two hops each: there and back), then signals `done`.
  func serve(_ other: Player, count: Int, done: Latch) async {
    var total = 0
    for _ in 0..<count { total &+= await other.hit() }
    hits = total
    done.signal()
  }

  func hit() -> Int {
    hits += 1
    return hits
  }
}

/// Runs `count` awaits of `b` from `a` (2 hops each) and measures the run; `usage` reads
/// what the two actors' threads have used so far.
func actorPingPong(
  _ a: Player, _ b: Player, count: Int, usage: () throws -> peers_thread_usage
) throws -> ThreadedSample {
  let done = Latch()
  let before = try usage()
  let start = nanosNow()
  Task { await a.serve(b, count: count, done: done) }
  try done.wait(for: "the actor ping-pong")
  let elapsed = nanosNow() - start
  return ThreadedSample(nanoseconds: elapsed, before: before, after: try usage())
}

extension NIOSide {
  /// Two actors on two NIO loops used as executors (`EventLoop.executor`, which NIO's own
  /// loops provide as `NIOSerialEventLoopExecutor`).
  static func actorPingPong(_ count: Int) throws -> ThreadedSample {
    try withGroup(threads: 2) { loops in
      let (a, b) = (loops[0], loops[1])
      return try PeerBench.actorPingPong(
        Player(executor: a.executor.asUnownedSerialExecutor()),
        Player(executor: b.executor.asUnownedSerialExecutor()), count: count
      ) { try usage(a, b) }
    }
  }

  /// Round trips per second of `try await loop.submit { }.get()` from a task.
  static func awaitedSubmit(_ count: Int) throws -> Double {
    try withGroup(threads: 1) { loops in
      let loop = loops[0]
      return try awaitedRate(count, of: "NIO's awaited submits") { try await loop.submit {}.get() }
    }
  }

  /// Round trips per second of `loop.submit { }.wait()` from a plain thread.
  static func waitedSubmit(_ count: Int) throws -> Double {
    try withGroup(threads: 1) { loops in
      let loop = loops[0]
      let start = nanosNow()
      for _ in 0..<count { try loop.submit {}.wait() }
      return Double(count) / (Double(nanosNow() - start) / 1e9)
    }
  }
}

/// `pairs` pairs of actors awaiting each other at once, `count` times a pair, each actor on
/// the executor `next()` hands out: a group's loops in turn, so the two of a pair sit on
/// different loops, and every loop serves several actors.
func groupPingPong(
  pairs: Int, count: Int, next: () -> UnownedSerialExecutor,
  usage: () throws -> peers_thread_usage
) throws -> ThreadedSample {
  let players = (0..<2 * pairs).map { _ in Player(executor: next()) }
  let done = Latch()
  let before = try usage()
  let start = nanosNow()
  for pair in 0..<pairs {
    let (a, b) = (players[2 * pair], players[2 * pair + 1])
    Task { await a.serve(b, count: count, done: done) }
  }
  for _ in 0..<pairs { try done.wait(for: "the group's actor ping-pong") }
  let elapsed = nanosNow() - start
  return ThreadedSample(nanoseconds: elapsed, before: before, after: try usage())
}

extension NIOSide {
  /// ``groupPingPong(pairs:count:next:usage:)`` on a `MultiThreadedEventLoopGroup` of two
  /// loops, its `next()` handing out the executors.
  static func groupPingPong(pairs: Int, count: Int) throws -> ThreadedSample {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    defer { try? group.syncShutdownGracefully() }
    let loops = Array(group.makeIterator())
    return try PeerBench.groupPingPong(
      pairs: pairs, count: count, next: { group.next().executor.asUnownedSerialExecutor() },
      usage: { try usage(loops[0], loops[1]) })
  }
}
