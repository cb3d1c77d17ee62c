/// What a pass in one mode reads from the loop's shared state (`LoopState`): whether the mode
/// has custom sources and descriptor watches, the deadline sources. Taken under the
/// state's lock and kept by the loop's thread for as long as nothing it holds has changed,
/// so that a pass with nothing new takes no lock.
///
/// A pass reads it only through ``EventRunLoop/subscript(passIn:)``, which checks on every
/// read that it is still current (one atomic load and a comparison of modes) and takes it
/// again when not. A call-out can change anything between two steps of a pass (add or
/// remove a source, run the loop nested in another mode), and no reader needs to remember
/// that: a stale snapshot cannot be read.
struct PassSnapshot {
  /// The ``PublishedState/structure`` count it was taken at.
  let structure: UInt64
  let mode: LoopMode
  /// Whether ``mode`` is one of the loop's common modes.
  let isCommon: Bool
  /// Whether the mode has custom sources (step 4 reads the signalled ones from the loop's
  /// ``SignalInbox``, not from here: a change to the sources costs a snapshot nothing more).
  let hasSources: Bool
  /// Whether the mode has descriptor watches.
  let hasWatches: Bool
  /// Whether some watch is held out of the `epoll` set (see `LoopState.heldTokens`).
  let hasHeldWatches: Bool
  let deadlineSources: [any DeadlineSource]

  /// Whether the mode has custom sources or descriptor watches: such a mode is not empty.
  var hasSourcesOrWatches: Bool { hasSources || hasWatches }

  /// What a run in ``mode`` reads as it begins, in one read of the snapshot.
  var runStart: (isCommon: Bool, hasSourcesOrWatches: Bool) { (isCommon, hasSourcesOrWatches) }

  /// Whether a pass in `active` has more to do as it begins than count itself: put back
  /// watches held out of the `epoll` set, or make its mode again (it joined or left the
  /// common modes).
  func asksMoreOfAPass(in active: ActiveMode) -> Bool {
    hasHeldWatches || isCommon != active.isCommon
  }
}

/// The loop thread's latest snapshot. Only this file reads it.
///
/// A snapshot that lists deadline sources is let go of as the outermost run ends, so that a
/// loop that is not running keeps nothing alive that was removed meanwhile; the next run's
/// first read takes a new one (one lock per run, in a loop that has timers). A snapshot
/// that lists none holds nothing but flags: it stays, and a run of a loop with nothing
/// changed since (zero-timeout runs in a game loop, say) reads it without the lock.
struct PassSnapshotSlot {
  fileprivate var latest: PassSnapshot?

  /// Lets go of the snapshot if it lists deadline sources (the outermost run ends).
  mutating func dropIfItHoldsDeadlineSources() {
    if latest?.deadlineSources.isEmpty == false { latest = nil }
  }
}

extension EventRunLoop {
  /// What a pass in `mode` reads, current when read: a `_read` accessor, so reading a field
  /// borrows the stored snapshot instead of copying it (a copy retains its array).
  subscript(passIn mode: LoopMode) -> PassSnapshot {
    _read {
      assertOnLoopThread()
      let structure = published.structure.load(ordering: .sequentiallyConsistent)
      if structure != local.passSnapshot.latest?.structure
        || mode != local.passSnapshot.latest?.mode
      {
        local.passSnapshot.latest = takeSnapshot(for: mode)
      }
      yield local.passSnapshot.latest!
    }
  }

  /// Lets go of the snapshot (the loop's thread is exiting).
  func dropPassSnapshot() {
    local.passSnapshot = PassSnapshotSlot()
  }

  // Out of line: a slow path of every read above (see Docs/Performance.md, "What the
  // annotations buy").
  @inline(never)
  private func takeSnapshot(for mode: LoopMode) -> PassSnapshot {
    state.withLock { state in
      let common = state.commonModes
      return PassSnapshot(
        structure: state.published.structure.load(ordering: .sequentiallyConsistent),
        mode: mode, isCommon: common.contains(mode),
        hasSources: state.sources.hasItems(for: mode, commonModes: common),
        hasWatches: state.watches.hasItems(for: mode, commonModes: common),
        hasHeldWatches: !state.heldTokens.isEmpty, deadlineSources: state.deadlineSources)
    }
  }
}
