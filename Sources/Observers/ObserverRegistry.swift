import RunLoopCore
import Synchronization

/// The observers of one loop, by mode: the one instrument the Observers module attaches to a
/// loop (lazily, when the first observer is added) to turn activities into observer
/// call-outs.
final class ObserverRegistry: RunLoopInstrument, @unchecked Sendable {
  // Unchecked: each `var` below says why it needs no lock (set once in init, before the
  // object is shared, or touched on one thread only); the rest is locked or atomic.
  let loopID: UInt64
  // Guarded by its own lock: which observers are in which modes, and the common modes
  // the cached resolutions were computed for.
  private let state = GuardedState(State())
  // How many (observer, mode) pairs the table holds; changed under the lock.
  private let scheduledCount = Atomic<Int>(0)
  // Bumped on every change to the table; a notification re-checks an observer's membership
  // only when an earlier call-out of the same notification changed the table.
  private let mutations = Atomic<UInt64>(0)
  // How many observers are in `.common`: with none, the loop's common modes do not matter
  // and a notification need not read them (a lock in the loop, and a set copied).
  private let commonCount = Atomic<Int>(0)
  // Touched on the loop's thread only (notifications come on it), so no lock: the observers
  // of the last mode notified, valid while `mutations` and the common modes are unchanged;
  // and the observers whose call-out is running on this loop, so that a nested run does not
  // re-enter them (other loops still may: each loop has its own registry).
  private var cache: (mode: LoopMode, version: UInt64, commonModes: Set<LoopMode>)?
  private var cachedObservers: [LoopObserver] = []
  private var firing: [ObjectIdentifier] = []

  private struct State {
    var table = LoopModeTable<LoopObserver>()
    var commonModes: Set<LoopMode> = []
  }

  init(loopID: UInt64) {
    self.loopID = loopID
  }

  var interests: InstrumentInterests { .activities }

  /// After the recorders (order 0): a tracer records an activity before the observers
  /// react to it, so the activity's record precedes its observers' call-outs.
  var notificationOrder: Int { 1000 }

  /// Adds `observer` to `mode`; returns `false` when it was already there.
  func add(_ observer: LoopObserver, mode: LoopMode) -> Bool {
    state.withLock { state in
      let inserted = state.table.insert(observer, in: mode)
      if inserted {
        if mode == .common { commonCount.add(1, ordering: .releasing) }
        scheduledCount.add(1, ordering: .releasing)
        mutations.add(1, ordering: .releasing)
      }
      return inserted
    }
  }

  /// The loop's thread exited: forget the registry and every registration in it, so that
  /// the observers (and what their closures captured) are released.
  func runLoopThreadDidExit(_ loop: EventRunLoop) {
    cache = nil
    cachedObservers = []
    _observerRegistries.withLock { registries in
      if registries[loopID] === self { registries[loopID] = nil }
    }
    let registrations = state.withLock { state -> [(LoopObserver, LoopMode)] in
      var all: [(LoopObserver, LoopMode)] = []
      for mode in state.table.modes {
        for observer in state.table.items(in: mode) { all.append((observer, mode)) }
      }
      state.table = LoopModeTable()
      scheduledCount.store(0, ordering: .releasing)
      commonCount.store(0, ordering: .releasing)
      mutations.add(1, ordering: .releasing)
      return all
    }
    for (observer, mode) in registrations { observer.didRemove(from: self, mode: mode) }
  }

  /// Removes `observer` from `mode`; returns whether it was there.
  @discardableResult
  func remove(_ observer: LoopObserver, mode: LoopMode) -> Bool {
    let removed = state.withLock { state in
      let removed = state.table.remove(observer, from: mode)
      if removed {
        if mode == .common { commonCount.subtract(1, ordering: .releasing) }
        scheduledCount.subtract(1, ordering: .releasing)
        mutations.add(1, ordering: .releasing)
      }
      return removed
    }
    if removed { observer.didRemove(from: self, mode: mode) }
    return removed
  }

  func contains(_ observer: LoopObserver, mode: LoopMode) -> Bool {
    state.withLock { $0.table.contains(observer, in: mode) }
  }

  /// The observers a run in `mode` notifies, in ascending order.
  private func observers(for mode: LoopMode, commonModes: Set<LoopMode>) -> [LoopObserver] {
    state.withLock { state in
      if state.commonModes != commonModes {
        // A mode joined the common modes since the last notification.
        state.commonModes = commonModes
        state.table.commonModesDidChange()
      }
      return state.table.resolved(for: mode, commonModes: commonModes)
    }
  }

  func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    // The registry stays installed once a loop had an observer: with none scheduled now, a
    // notification must cost no more than this load (runloop-bench, tracing off again).
    guard scheduledCount.load(ordering: .acquiring) > 0 else { return }
    // Copy the list out and call with no lock held: an observer may add or remove observers
    // (those added now are first told about the next notification) or run the loop nested.
    let commonModes: Set<LoopMode> =
      commonCount.load(ordering: .acquiring) > 0 ? loop.commonModes : []
    let version = mutations.load(ordering: .acquiring)
    let candidates: [LoopObserver]
    if let cache, cache.version == version, cache.mode == info.mode,
      cache.commonModes == commonModes
    {
      candidates = cachedObservers
    } else {
      candidates = observers(for: info.mode, commonModes: commonModes)
      cache = (info.mode, version, commonModes)
      cachedObservers = candidates
    }
    for observer in candidates where observer.activities.contains(activity) {
      // As in CoreFoundation, the list is the snapshot taken above: an observer invalidated
      // by an earlier call-out of this notification is skipped, but one only removed from
      // the mode is still valid and still called this once.
      guard observer.isValid else { continue }
      let id = ObjectIdentifier(observer)
      guard !firing.contains(id), observer.claim() else { continue }
      firing.append(id)
      loop.withCallout(.observer, name: observer.name) {
        observer.handler(observer, activity)
      }
      if let index = firing.lastIndex(of: id) { firing.remove(at: index) }
      observer.calloutDidReturn()
    }
  }
}

/// The registry of each loop that has had an observer, by loop id.
let _observerRegistries = GuardedState<[UInt64: ObserverRegistry]>([:])
