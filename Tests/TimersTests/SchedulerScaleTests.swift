import RunLoopCore
import RunLoopTimers
import Testing

@Suite("The scheduler at scale")
struct SchedulerScaleTests {
  /// A permutation of 0..<count (a full-period linear congruential walk), so that fire dates
  /// arrive in scrambled order.
  private func scrambled(_ count: Int) -> [Int] {
    var values = Array(0..<count)
    var state: UInt64 = 0x2545_F491_4F6C_DD1D
    for index in stride(from: count - 1, to: 0, by: -1) {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      values.swapAt(index, Int(state >> 33) % (index + 1))
    }
    return values
  }

  @Test func hundredThousandAddsAndCancelsLeaveExactlyTheRightTimers() throws {
    let count = 100_000
    let order = scrambled(count)
    let (fired, consistentAfterCancel, resultAfter) = try onNewThread {
      loop -> ([Int], Bool, RunResult) in
      let log = GuardedState<[Int]>([])
      let base = ContinuousClock.now - .seconds(10)
      var timers: [LoopTimer] = []
      timers.reserveCapacity(count)
      for index in 0..<count {
        // Past fire dates: each timer is scheduled at its creation instead (as in
        // CoreFoundation), so every timer left is due at the first pass, in creation order.
        let rank = order[index]
        let timer = try LoopTimer(fireAt: base + .microseconds(rank * 10)) { _ in
          log.withLock { $0.append(rank) }
        }
        timers.append(timer)
        try loop.add(timer, mode: .default)
      }
      // Cancel every timer whose rank is odd.
      for timer in timers.indices where order[timer] % 2 == 1 { timers[timer].invalidate() }
      let consistent = heapsAreConsistent(loop)
      try loop.run(mode: .default, timeout: .zero)
      let result = try loop.run(mode: .default, timeout: .milliseconds(50))
      return (log.withLock { $0 }, consistent, result)
    }
    #expect(consistentAfterCancel)
    #expect(fired.count == count / 2)
    // Exactly the even ranks, in the order they were made.
    #expect(fired == order.filter { $0 % 2 == 0 })
    // Nothing left: the mode is empty.
    #expect(resultAfter == .finished)
  }

  @Test func reschedulingManyTimersKeepsFireDateOrder() throws {
    let count = 20_000
    let order = scrambled(count)
    let fired = try onNewThread { loop -> [Int] in
      let log = GuardedState<[Int]>([])
      let base = ContinuousClock.now - .seconds(10)
      var timers: [LoopTimer] = []
      for index in 0..<count {
        let timer = try LoopTimer(fireAt: .now + .seconds(3600), name: "\(index)") { timer in
          log.withLock { $0.append(Int(timer.name)!) }
        }
        timers.append(timer)
        try loop.add(timer, modes: index % 3 == 0 ? [.default, .common] : [.default])
      }
      // Move each timer to a scrambled past date: they must fire in that date order.
      for index in 0..<count { timers[index].fireDate = base + .microseconds(order[index]) }
      #expect(heapsAreConsistent(loop))
      try loop.run(mode: .default, timeout: .zero)
      return log.withLock { $0 }
    }
    let expected = (0..<count).sorted { order[$0] < order[$1] }
    #expect(fired == expected)
  }
}
