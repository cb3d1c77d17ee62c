import Synchronization

/// The loop's active runs as other threads see them, in one atomic word: how deep the runs
/// are nested, and whether the innermost was asked to stop. Its transitions are named after
/// what happens.
///
/// The loop thread keeps the runs themselves (their modes, the stop requests of outer runs)
/// in `LoopThreadState.runs`; this word is what ``EventRunLoop/stop()`` and
/// ``EventRunLoop/isRunning`` need. So a run begins and ends with one atomic
/// read-modify-write each and no lock: a thread that runs zero-timeout runs in a loop (a
/// game loop, say) pays for its runs what it pays for its `epoll_wait`, not for a mutex.
///
/// ```
///   bits 0-31  depth: how many runs are active (0: the loop is not running)
///   bit 32     stop: the innermost run was asked to stop
/// ```
///
/// A stop request names no run: it is for whichever run is innermost when it lands, the
/// moment the compare-and-swap succeeds. When a nested run begins, the loop moves the outer
/// run's request into its own records, and puts it back when the nested run ends.
///
/// Every access is sequentially consistent, for the same reason as ``Waker``'s: a thread
/// that stops the loop sets the bit and then wakes it; the loop takes the bit and then looks
/// for wake-ups; one of the two sees the other.
final class ActiveRuns: Sendable {
  private static let depthMask: UInt64 = 0xFFFF_FFFF
  private static let stopBit: UInt64 = 1 << 32

  private let word = Atomic<UInt64>(0)

  /// How many runs are active (any thread).
  var depth: Int { Int(word.load(ordering: .sequentiallyConsistent) & Self.depthMask) }

  // MARK: Any thread

  /// Asks the innermost active run to stop; returns `false` when no run is active (the
  /// request is then forgotten, as in CoreFoundation).
  func requestStop() -> Bool {
    var current = word.load(ordering: .sequentiallyConsistent)
    while current & Self.depthMask > 0 {
      let (exchanged, original) = word.compareExchange(
        expected: current, desired: current | Self.stopBit, ordering: .sequentiallyConsistent)
      if exchanged { return true }
      current = original
    }
    return false
  }

  // MARK: The loop's thread

  /// A run begins at `depth` (1 for the outermost). Returns whether the run it is nested in
  /// had a stop request (the loop keeps it until the nested run ends).
  func runBegins(depth: Int) -> Bool {
    let before = word.exchange(UInt64(depth), ordering: .sequentiallyConsistent)
    return before & Self.stopBit != 0
  }

  /// The run at `depth` ends; the one it was nested in (if any) gets back its stop request.
  func runEnds(depth: Int, outerStopRequested: Bool) {
    word.store(
      UInt64(depth - 1) | (outerStopRequested ? Self.stopBit : 0), ordering: .sequentiallyConsistent
    )
  }

  /// Whether the innermost run was asked to stop; clears the request.
  func takeStopRequest() -> Bool {
    guard word.load(ordering: .sequentiallyConsistent) & Self.stopBit != 0 else { return false }
    let before = word.bitwiseAnd(~Self.stopBit, ordering: .sequentiallyConsistent).oldValue
    return before & Self.stopBit != 0
  }

  /// Whether the innermost run has a stop request it has not taken yet.
  var stopIsPending: Bool {
    word.load(ordering: .sequentiallyConsistent) & Self.stopBit != 0
  }
}
