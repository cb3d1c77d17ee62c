import Synchronization

/// The loop's active runs as other threads see them, in one atomic word: how deep the runs
/// are nested, whether the innermost was asked to stop, and whether the loop thread's pass
/// snapshot is parked here between runs. Its transitions are named after what happens.
///
/// The loop thread keeps the runs themselves (their modes, the stop requests of outer runs)
/// in `LoopThreadState.runs`; this word is what ``EventRunLoop/stop()``,
/// ``EventRunLoop/isRunning`` and the threads that change the loop's structure need. So a
/// run begins and ends with one atomic read-modify-write each and no lock: a thread that runs
/// zero-timeout runs in a loop (a game loop, say) pays for its runs what it pays for its
/// `epoll_wait`, not for a mutex.
///
/// ```
///   bits 0-31  depth: how many runs are active (0: the loop is not running)
///   bit 32     stop: the innermost run was asked to stop
///   bit 33     parked: `parked` holds the loop thread's snapshot (only at depth 0)
///   bit 34     dropping: a thread is letting go of the parked snapshot
/// ```
///
/// A stop request names no run: it is for whichever run is innermost when it lands, the
/// moment the compare-and-swap succeeds. When a nested run begins, the loop moves the outer
/// run's request into its own records, and puts it back when the nested run ends.
///
/// The parked snapshot (see `PassSnapshotSlot`) belongs to the loop thread until it sets
/// `parked`; then to whoever clears `parked`: the loop as its next outermost run begins, or
/// a thread that changed the loop's structure, which sets `dropping`, lets go of it and
/// clears `dropping`. So `parked` is read and written by one thread at a time.
///
/// Every access is sequentially consistent, for the same reason as ``Waker``'s: a thread
/// that changes the structure moves the structure count on and then reads this word; the
/// loop writes this word and then reads the count; one of the two sees the other.
final class ActiveRuns: Sendable {
  private static let depthMask: UInt64 = 0xFFFF_FFFF
  private static let stopBit: UInt64 = 1 << 32
  private static let parkedBit: UInt64 = 1 << 33
  private static let droppingBit: UInt64 = 1 << 34

  private let word = Atomic<UInt64>(0)
  // Owned as the type's comment says (the `parked` and `dropping` bits hand it over), so
  // never touched by two threads at once: the word's compare-and-swaps order every access.
  // Unsafe in the compiler's eyes only; the alternative, a lock, is what this type removes
  // from every run (see Docs/Performance.md, "What the annotations buy").
  private nonisolated(unsafe) var parked: PassSnapshot?

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

  /// Lets go of the parked snapshot, if there is one: the structure it was taken from has
  /// changed (call after moving the structure count on; from any thread, the compare-and-swap
  /// makes one of them the one that drops it). It is released here: it holds only flags and
  /// the deadline sources it listed, and a thread that removes a deadline source holds a
  /// reference to it, so nothing is freed under the loop's lock that one of its callers holds.
  func dropParkedSnapshot() {
    var current = word.load(ordering: .sequentiallyConsistent)
    while current & Self.parkedBit != 0 {
      let claimed = (current & ~Self.parkedBit) | Self.droppingBit
      let (exchanged, original) = word.compareExchange(
        expected: current, desired: claimed, ordering: .sequentiallyConsistent)
      if exchanged {
        parked = nil
        word.bitwiseAnd(~Self.droppingBit, ordering: .sequentiallyConsistent)
        return
      }
      current = original
    }
  }

  // MARK: The loop's thread

  /// A run begins at `depth` (1 for the outermost). Returns whether the run it is nested in
  /// had a stop request (the loop keeps it until the nested run ends), and, for the
  /// outermost run, the snapshot parked by the last run if nobody let go of it.
  func runBegins(depth: Int) -> (outerStopRequested: Bool, snapshot: PassSnapshot?) {
    var current = word.load(ordering: .sequentiallyConsistent)
    while true {
      // Only the `dropping` bit survives: the new run has no stop request yet, and a parked
      // snapshot is taken (by the outermost run) or not there (nested runs).
      let next = (current & Self.droppingBit) | UInt64(depth)
      let (exchanged, original) = word.compareExchange(
        expected: current, desired: next, ordering: .sequentiallyConsistent)
      if exchanged {
        let snapshot = current & Self.parkedBit != 0 ? parked.take() : nil
        return (current & Self.stopBit != 0, snapshot)
      }
      current = original
    }
  }

  /// The run at `depth` ends; the one it was nested in (if any) gets back its stop request.
  /// The outermost run parks `snapshot` unless a thread is still letting go of the last one.
  /// Returns whether it parked it.
  func runEnds(depth: Int, outerStopRequested: Bool, snapshot: consuming PassSnapshot?)
    -> Bool
  {
    var current = word.load(ordering: .sequentiallyConsistent)
    let parking = depth == 1 && snapshot != nil && current & Self.droppingBit == 0
    // `dropping` is set only while `parked` is, and `parked` only by this thread: with
    // neither set, nobody else touches `parked` until the word says so.
    if parking { parked = snapshot.take() }
    while true {
      var next = (current & Self.droppingBit) | UInt64(depth - 1)
      if outerStopRequested { next |= Self.stopBit }
      if parking { next |= Self.parkedBit }
      let (exchanged, original) = word.compareExchange(
        expected: current, desired: next, ordering: .sequentiallyConsistent)
      if exchanged { return parking }
      current = original
    }
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
