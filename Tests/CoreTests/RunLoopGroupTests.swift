import CRunLoopLinux
import Glibc
import RunLoopCore
import RunLoopTestSupport
import Synchronization
import Testing

/// A group of loops: round robin, the caller's own loop first, an executor pool for actors,
/// and a graceful shutdown that runs what was queued before it.
@Suite("A group of loops")
struct RunLoopGroupTests {
  /// An actor pinned to one loop of a group.
  actor Counter {
    let loop: EventRunLoop
    var count = 0
    init(loop: EventRunLoop) { self.loop = loop }
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    func increment() -> pid_t {
      count += 1
      return crl_current_tid()
    }
  }

  @Test func nextHandsOutTheLoopsRoundRobin() async throws {
    let group = try RunLoopGroup(threadCount: 4, name: "rr")
    let handedOut = (0..<8).map { _ in group.next() }
    #expect(handedOut == group.loops + group.loops)
    #expect(Set(group.loops).count == 4)
    try await group.shutdownGracefully()
  }

  @Test func anyPrefersTheCallersOwnLoopOfTheGroup() async throws {
    let group = try RunLoopGroup(threadCount: 3, name: "any")
    for loop in group.loops {
      let chosen = try await loop.submit { group.any() }
      #expect(chosen === loop)
    }
    #expect(group.loops.contains(group.any()))
    try await group.shutdownGracefully()
  }

  @Test func actorsPinnedToTheGroupsLoopsRunOnTheirLoopsThreads() async throws {
    let group = try RunLoopGroup(threadCount: 4, name: "actors")
    let counters = (0..<8).map { _ in Counter(loop: group.next()) }
    for _ in 0..<50 {
      for counter in counters {
        let thread = await counter.increment()
        #expect(thread == counter.loop.threadID)
      }
    }
    for counter in counters { #expect(await counter.count == 50) }
    try await group.shutdownGracefully()
  }

  @Test func aTaskPreferringTheGroupRunsOnItsLoops() async throws {
    let group = try RunLoopGroup(threadCount: 2, name: "prefer")
    let threads = Set(group.loops.map(\.threadID))
    let seen = await withTaskExecutorPreference(group) { crl_current_tid() }
    #expect(threads.contains(seen))
    try await group.shutdownGracefully()
  }

  @Test func aGracefulShutdownRunsTheRequestsQueuedBeforeItAndCountsTheLateOnes() async throws {
    let group = try RunLoopGroup(threadCount: 4, name: "drain")
    let ran = Atomic<Int>(0)
    for _ in 0..<4_000 { group.next().perform { ran.add(1, ordering: .relaxed) } }
    try await group.shutdownGracefully()
    #expect(ran.load(ordering: .relaxed) == 4_000)
    #expect(group.abandonedPerformRequests == 0)
    #expect(group.threads.allSatisfy { $0.state == .finished })
    _ = group.next().perform {}
    #expect(group.abandonedPerformRequests == 1)
    await #expect(throws: RunLoopError.invalidState("")) { try await group.shutdownGracefully() }
  }

  @Test func aGroupNeedsAThread() {
    #expect(throws: RunLoopError.invalidArgument("")) { _ = try RunLoopGroup(threadCount: 0) }
  }
}
