import Synchronization

/// The custom sources of one loop that were signalled since its step 4 last looked, and
/// those still signalled that step 4 could not run yet (signalled for another mode, or left
/// by a run that handles one source): what step 4 reads instead of every source of its
/// mode, so a pass costs the signalled sources, not all of them, and a change to the
/// loop's sources costs the pass nothing.
///
/// A source enters when it is signalled while scheduled on the loop (its first signal since
/// it last ran: later ones find it there), or when it is added while signalled. It leaves
/// when step 4 finds it performed (by this loop or another), invalidated, or gone from the
/// loop, and when it leaves the loop's last mode. Kept by identity, so it is there once.
///
/// Lock order: the loop's state lock, then a source's own lock, then this lock; nothing
/// is locked while this one is held.
final class SignalInbox: Sendable {
  private struct Entries {
    var byID: [ObjectIdentifier: CustomInputSource] = [:]
    /// The entries a sweep drops, gathered first (a dictionary cannot shrink while it is
    /// iterated); kept, so that a sweep allocates nothing once it has grown.
    var dropping: [ObjectIdentifier] = []
    /// Entries step 4 looked at: what a test of the pass's complexity counts.
    var examined = 0
  }

  private let entries = GuardedState(Entries())
  // Set when a source enters, cleared when step 4 takes the entries: lets a pass with no
  // new signal skip the lock.
  private let fresh = Atomic<Bool>(false)
  private let holdsSources = Atomic<Bool>(false)

  /// Adds `source`; a source already there stays once.
  func add(_ source: CustomInputSource) {
    entries.withLock { entries in
      entries.byID[ObjectIdentifier(source)] = source
      // Sequentially consistent, before the signaller's wake-up: a pass that clears its wake
      // flag and then reads this one sees the source, or the signaller sees the flag clear
      // and wakes the loop (see `Waker`).
      holdsSources.store(true, ordering: .sequentiallyConsistent)
      fresh.store(true, ordering: .sequentiallyConsistent)
    }
  }

  /// Removes `source` (it left the loop's last mode).
  func remove(_ source: CustomInputSource) {
    entries.withLock { entries in
      guard entries.byID.removeValue(forKey: ObjectIdentifier(source)) != nil else { return }
      holdsSources.store(!entries.byID.isEmpty, ordering: .sequentiallyConsistent)
    }
  }

  /// Whether a source entered since step 4 last looked.
  var hasFreshSignals: Bool { fresh.load(ordering: .sequentiallyConsistent) }

  /// Whether any source is there (perhaps performed already, until step 4 next looks).
  var mayHoldSources: Bool { holdsSources.load(ordering: .sequentiallyConsistent) }

  /// Step 4's look: keeps the entries `keep` says to keep (it sees each source with the
  /// stamp of its pending signal, 0 for none), and drops the others.
  func sweep(_ keep: (CustomInputSource, UInt64) -> Bool) {
    entries.withLock { entries in
      fresh.store(false, ordering: .sequentiallyConsistent)
      entries.examined += entries.byID.count
      // Read under this lock: a source signalled again after its stamp was read as 0 waits
      // for the lock to enter again, so dropping it here loses nothing.
      for (id, source) in entries.byID where !keep(source, source.pendingSignalStamp) {
        entries.dropping.append(id)
      }
      for id in entries.dropping { entries.byID[id] = nil }
      entries.dropping.removeAll(keepingCapacity: true)
      holdsSources.store(!entries.byID.isEmpty, ordering: .sequentiallyConsistent)
    }
  }

  /// Empties the inbox, returning what it held (to be released outside the caller's lock).
  func removeAll() -> [CustomInputSource] {
    entries.withLock { entries in
      let all = Array(entries.byID.values)
      entries.byID = [:]
      holdsSources.store(false, ordering: .sequentiallyConsistent)
      fresh.store(false, ordering: .sequentiallyConsistent)
      return all
    }
  }

  /// Entries step 4 has looked at so far.
  var examined: Int { entries.withLock { $0.examined } }
}
