import Glibc
import RunLoopCore
import Synchronization

extension Scenarios {
  /// A pthread barrier both threads wait at, so that the unlucky interleaving of a race, which
  /// chance produces now and then, happens on every round.
  final class Rendezvous: @unchecked Sendable {
    // Only pthread_barrier_wait touches it, which is safe from any thread.
    private let barrier = UnsafeMutablePointer<pthread_barrier_t>.allocate(capacity: 1)

    init(threads: UInt32) {
      pthread_barrier_init(barrier, nil, threads)
    }

    deinit {
      pthread_barrier_destroy(barrier)
      barrier.deallocate()
    }

    func wait() { _ = pthread_barrier_wait(barrier) }
  }

  static let race = Scenario(
    name: "race",
    title: "A race loses updates; a lock, or one loop thread owning the state, loses none",
    guide: "Thread Management > Synchronization (workbook: @synchronized, NSLock)",
    article: "ThreadManagement.md, Shared state and locks"
  ) { narration in
    let rounds = 100
    narration.say("Two threads each add 1 to a shared count, \(rounds) times. Adding is three")
    narration.say("steps: read, add, write. A barrier lines both threads up between the read")
    narration.say("and the write, the interleaving that chance produces now and then:")
    let count = Atomic<Int>(0)
    let rendezvous = Rendezvous(threads: 2)
    let racers = (1...2).map { index in
      RunLoopThread(name: "racer-\(index)") { _ in
        for _ in 0..<rounds {
          let seen = count.load(ordering: .relaxed)  // read
          rendezvous.wait()  // the other thread reads the same value meanwhile
          count.store(seen + 1, ordering: .relaxed)  // write: one of the two adds is lost
          rendezvous.wait()
        }
      }
    }
    for racer in racers { try racer.start() }
    for racer in racers { try racer.join() }
    let raced = count.load(ordering: .relaxed)
    narration.event("unprotected: \(raced) of \(2 * rounds) adds kept")
    narration.expect(
      raced == rounds, "each round lost one update: \(2 * rounds - raced) of \(2 * rounds)")

    narration.say("The same work with the read and the write under one lock (GuardedState):")
    let locked = GuardedState(0)
    let lockers = (1...2).map { index in
      RunLoopThread(name: "locker-\(index)") { _ in
        for _ in 0..<rounds {
          locked.withLock { $0 += 1 }
          rendezvous.wait()
        }
      }
    }
    for locker in lockers { try locker.start() }
    for locker in lockers { try locker.join() }
    let safe = locked.withLock { $0 }
    narration.event("under a lock: \(safe) of \(2 * rounds) adds kept")
    narration.expect(safe == 2 * rounds, "no update was lost under the lock")

    narration.say("Or no sharing at all: the count belongs to one loop thread, and the others")
    narration.say("send it their adds as perform requests, which its loop runs one at a time:")
    // Only the owner's thread adds to it; the lock is for reading the total here.
    let owned = GuardedState(0)
    let owner = RunLoopThread(name: "owner") { thread in
      try thread.runLoop.add(keepAlive("keep-alive"), mode: .default)
      try thread.runLoop.run()
    }
    try owner.start()
    let senders = (1...2).map { index in
      RunLoopThread(name: "sender-\(index)") { _ in
        for _ in 0..<rounds { owner.runLoop.perform { owned.withLock { $0 += 1 } } }
      }
    }
    for sender in senders { try sender.start() }
    for sender in senders { try sender.join() }
    try owner.runLoop.performAndWait {}  // every add queued before this one has run
    owner.runLoop.stop()
    try owner.join()
    let total = owned.withLock { $0 }
    narration.event("owned by one loop thread: \(total) of \(2 * rounds) adds kept")
    narration.expect(total == 2 * rounds, "no update was lost with one owner")
  }
}
