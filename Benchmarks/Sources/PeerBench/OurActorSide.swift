import CPeers
import RunLoopCore

/// Our side of issue 12's rows: actors pinned to our loops (`loop.asUnownedSerialExecutor()`)
/// and the awaitable `perform`.
enum OurActorSide {
  /// Two actors, each on its own loop of ours, awaiting each other.
  static func pingPong(_ count: Int) throws -> ThreadedSample {
    let a = try OurLoopThread(name: "actor-a")
    let b = try OurLoopThread(name: "actor-b")
    defer {
      try? a.stop()
      try? b.stop()
    }
    return try actorPingPong(
      Player(executor: a.loop.asUnownedSerialExecutor()),
      Player(executor: b.loop.asUnownedSerialExecutor()), count: count
    ) { try a.usage() + b.usage() }
  }

  /// Round trips per second of `try await loop.submit { }` from a task.
  static func awaitedPerform(_ count: Int) throws -> Double {
    let worker = try OurLoopThread(name: "perform")
    defer { try? worker.stop() }
    let loop = worker.loop
    return try awaitedRate(count, of: "our awaited performs") { try await loop.submit {} }
  }
}

extension OurActorSide {
  /// ``groupPingPong(pairs:count:next:usage:)`` on a `RunLoopGroup` of two loops, its
  /// `next()` handing out the executors.
  static func groupPingPong(pairs: Int, count: Int) throws -> ThreadedSample {
    let group = try RunLoopGroup(threadCount: 2, name: "actor-group")
    defer {
      group.stop()
      for thread in group.threads { try? thread.join() }
    }
    let usage = { try group.loops.map(threadUsage(of:)).reduce(peers_thread_usage(), +) }
    return try PeerBench.groupPingPong(
      pairs: pairs, count: count, next: { group.next().asUnownedSerialExecutor() }, usage: usage)
  }
}
