import Glibc
import RunLoopCore
import Synchronization
import Testing

/// Holds a request through an unowned reference only. The object's memory stays allocated
/// while the reference exists, so its identity cannot be handed to a new object.
private final class UnownedHandle: Sendable {
  unowned let request: PerformRequest

  init(_ request: PerformRequest) {
    self.request = request
  }
}

@Suite("Perform requests: the linked queue, the pool and their edges")
struct PerformRequestListTests {
  // `weak var last = loop.perform { }`, to cancel it later if it has not run yet: once it
  // ran, the handle must not stand for somebody else's request.
  @Test func aWeakReferenceToAFinishedRequestNeverStandsForALaterOne() throws {
    let (cancelledAnother, sawPendingAgain, order) = try onNewThread {
      loop -> (Bool, Bool, [Int]) in
      let recorder = GuardedState<[Int]>([])
      weak let first = loop.perform { recorder.withLock { $0.append(0) } }
      try loop.run(mode: .default, timeout: .zero)
      var cancelled = false
      var pendingAgain = false
      for index in 1..<20 {
        loop.perform { recorder.withLock { $0.append(index) } }
        if first?.state == .pending { pendingAgain = true }
        if first?.cancel() == true { cancelled = true }
        try loop.run(mode: .default, timeout: .zero)
      }
      return (cancelled, pendingAgain, recorder.withLock { $0 })
    }
    #expect(!cancelledAnother)
    #expect(!sawPendingAgain)
    #expect(order == Array(0..<20))
  }

  @Test func aRequestAnUnownedReferenceNamesIsNeverHandedOutAgain() throws {
    let handedOutAgain = try onNewThread { loop -> Bool in
      var strong: PerformRequest? = loop.perform {}
      let firstID = ObjectIdentifier(strong!)
      let handle = UnownedHandle(strong!)
      strong = nil
      try loop.run(mode: .default, timeout: .zero)
      var again = false
      for _ in 0..<20 {
        if ObjectIdentifier(loop.perform {}) == firstID { again = true }
        try loop.run(mode: .default, timeout: .zero)
      }
      withExtendedLifetime(handle) {}
      return again
    }
    #expect(!handedOutAgain)
  }
}
