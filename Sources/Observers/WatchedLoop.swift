import RunLoopCore
import Synchronization

/// What the ``StallWatchdog`` knows of one loop, laid out so that the loop thread only stores
/// into it: the number of the stretch it is awake in (0 while it sleeps), its depth and pass,
/// and the call-out it is in, as integers. The watchdog's thread reads these at each look and
/// times the stretches with its own clock, so the loop thread reads no clock and takes no
/// lock on a pass. The call-out's strings are in ``LoopNames``; the mode of a stall is read
/// from the loop when it is reported (the innermost run's), so no pass publishes it.
///
/// A stretch reported stalled is marked in ``awake`` itself (``reportedBit``, set by a
/// compare-and-swap on the watchdog's thread), and the loop thread clears the word with one
/// exchange when it goes to sleep: so exactly one of them sees a stall that ends as it is
/// reported, and a reported stall always gets its recovery.
final class WatchedLoop: @unchecked Sendable {
  // Unchecked: the atomics are shared; every `var` below is owned by one thread, named in
  // its comment.

  struct Stall {
    var loop: UInt64
    var tid: Int32
    var awakeSince: Int64
    var mode: String
    var depth: Int
    var iteration: UInt64
    var calloutKind: String?
    var calloutName: String?
  }

  struct Recovery {
    var awakeSince: Int64
    var mode: String
    var depth: Int
    var iteration: UInt64
  }

  /// Set in ``awake`` once the stretch was reported stalled.
  static let reportedBit: UInt64 = 1 << 63
  /// ``callout`` while the loop is in no call-out.
  static let noCallout: UInt64 = .max

  let loop: UInt64
  let tid: Int32
  // Read only to report a stall: weak, since the loop's thread, not a watchdog, keeps a loop.
  private weak var runLoop: EventRunLoop?
  /// 0 while the loop sleeps; while it is awake, the number of the stretch (from 1), with
  /// ``reportedBit`` once reported.
  let awake = Atomic<UInt64>(0)
  /// The innermost run's depth.
  let depth = Atomic<Int>(0)
  let iteration = Atomic<UInt64>(0)
  /// The innermost call-out's kind id (high 32 bits) and name id (low 32 bits).
  let callout = Atomic<UInt64>(noCallout)
  /// When the reported stretch began, as the watchdog bounds it; stored before the
  /// ``reportedBit`` is set, read by the loop thread for the recovery.
  let reportedSince = Atomic<Int64>(0)
  let strings = LoopNames()

  // The loop thread's: the stretch number, whether awake, the call-outs it is in (their
  // words, outermost first) and the ids of its strings.
  private var stretch: UInt64 = 0
  private var isAwake = false
  private var callouts: [UInt64] = []
  private var kinds = LoopNames.Cache()
  private var names = LoopNames.Cache()

  // The watchdog thread's: the stretch it saw at its last look, since when it is awake at
  // the latest (the look before the one that first saw it), when it first saw it, and the
  // time of its last look (the loop's registration before the first).
  private var observed: UInt64 = 0
  private var since: Int64 = 0
  private var firstSeen: Int64 = 0
  private var lastLook: Int64

  /// - Parameter registeredAt: a clock reading taken before the loop's first notification,
  ///   the bound of its first stretch's start.
  init(_ runLoop: EventRunLoop, registeredAt: Int64) {
    self.loop = runLoop.id
    self.tid = runLoop.threadID
    self.runLoop = runLoop
    self.lastLook = registeredAt
  }

  // MARK: the loop thread

  /// The loop reached `activity`: it is awake from a wake-up or the start of an outermost
  /// run, and no longer from `beforeWaiting` or the end of its outermost run. Returns the
  /// recovery to report when the stretch that ends had been reported stalled.
  func reach(_ activity: LoopActivity, _ info: LoopPassInfo) -> Recovery? {
    publish(info)
    guard activity == .beforeWaiting || (activity == .exit && info.depth <= 1) else {
      wake()
      return nil
    }
    if activity == .exit, !callouts.isEmpty {
      callouts.removeAll(keepingCapacity: true)
      callout.store(Self.noCallout, ordering: .relaxed)
    }
    guard isAwake else { return nil }
    isAwake = false
    let ended = awake.exchange(0, ordering: .acquiringAndReleasing)
    guard ended & Self.reportedBit != 0 else { return nil }
    return Recovery(
      awakeSince: reportedSince.load(ordering: .relaxed), mode: info.mode.name,
      depth: info.depth, iteration: info.iteration)
  }

  /// A call-out starts (a loop that was not known to be awake is from now).
  func enter(kind: String, name: String, _ info: LoopPassInfo) {
    let word =
      UInt64(kinds.id(kind, in: strings)) << 32 | UInt64(names.id(name, in: strings))
    callouts.append(word)
    callout.store(word, ordering: .relaxed)
    publish(info)
    wake()
  }

  /// The innermost call-out returned.
  func leave() {
    _ = callouts.popLast()
    callout.store(callouts.last ?? Self.noCallout, ordering: .relaxed)
  }

  private func wake() {
    guard !isAwake else { return }
    isAwake = true
    stretch &+= 1
    awake.store(stretch, ordering: .releasing)
  }

  private func publish(_ info: LoopPassInfo) {
    depth.store(info.depth, ordering: .relaxed)
    iteration.store(info.iteration, ordering: .relaxed)
  }

  // MARK: the watchdog's thread

  /// Looks at the loop at `now`: the stall to report when the loop has been awake in one
  /// stretch for `threshold` or more, as this thread's looks tell, and it was not reported
  /// yet. Its start is the look before the first that saw the stretch: never later than
  /// the loop woke, so the time awake reported is never short (it is long by at most one
  /// look's period).
  func look(now: Int64, threshold: Int64) -> Stall? {
    defer { lastLook = now }
    let word = awake.load(ordering: .acquiring)
    let current = word & ~Self.reportedBit
    guard current != 0 else {
      observed = 0
      return nil
    }
    guard current == observed else {
      observed = current
      since = lastLook
      firstSeen = now
      return nil
    }
    guard word & Self.reportedBit == 0, now - firstSeen >= threshold else { return nil }
    reportedSince.store(since, ordering: .relaxed)
    // Fails when the loop went to sleep meanwhile: then there is no stall to report.
    guard
      awake.compareExchange(
        expected: word, desired: word | Self.reportedBit, ordering: .acquiringAndReleasing
      ).exchanged
    else { return nil }
    let callout = callout.load(ordering: .relaxed)
    let inCallout = callout != Self.noCallout
    return Stall(
      loop: loop, tid: tid, awakeSince: since, mode: runLoop?.currentMode?.name ?? "",
      depth: depth.load(ordering: .relaxed),
      iteration: iteration.load(ordering: .relaxed),
      calloutKind: inCallout ? strings.string(UInt32(truncatingIfNeeded: callout >> 32)) : nil,
      calloutName: inCallout ? strings.string(UInt32(truncatingIfNeeded: callout)) : nil)
  }
}
