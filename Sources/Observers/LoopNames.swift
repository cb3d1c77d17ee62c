import RunLoopCore
import Synchronization

/// The strings (call-out kinds and names) that a ``WatchedLoop``'s integers name. The
/// loop thread adds a string the first time it uses it; the watchdog's thread looks one up
/// only to report a stall, so the table sits behind a lock that a pass does not take: the
/// loop thread finds the strings it repeats in its own ``Cache``.
///
/// It holds at most ``capacity`` strings (a loop whose call-out names are all different
/// would otherwise grow it for ever); when it is full it starts again, empty, under a new
/// generation that the ids carry, and an id of an older generation names nothing.
final class LoopNames: Sendable {
  /// The most strings a table holds.
  static let capacity = 4096

  private struct Table {
    var generation: UInt32 = 0
    var strings: [String] = []
  }

  private let table = GuardedState(Table())
  // The table's generation, for the loop thread's caches to check without the lock (the
  // loop thread is the only one that adds, so only it changes this).
  private let generation = Atomic<UInt32>(0)

  /// The string `id` names; `nil` for an id of an older generation.
  func string(_ id: UInt32) -> String? {
    table.withLock { table in
      let index = Int(id & 0xFFFF)
      guard id >> 16 == table.generation & 0xFFFF, index < table.strings.count else {
        return nil
      }
      return table.strings[index]
    }
  }

  /// Adds `string`; returns its id, and whether the table started again (every id handed
  /// out before names nothing now).
  private func add(_ string: String) -> (id: UInt32, renewed: Bool) {
    table.withLock { table in
      var renewed = false
      if table.strings.count == Self.capacity {
        table.generation &+= 1
        table.strings.removeAll()
        generation.store(table.generation, ordering: .relaxed)
        renewed = true
      }
      table.strings.append(string)
      return ((table.generation & 0xFFFF) << 16 | UInt32(table.strings.count - 1), renewed)
    }
  }

  /// The loop thread's map from some of its strings (its call-out kinds, say) to their ids:
  /// a lookup with no lock. Keyed by `String`, so two names that differ only in their
  /// Unicode normalisation share the first one's id (and spelling in a report).
  struct Cache {
    private var ids: [String: UInt32] = [:]
    // The last string looked up: a loop mostly repeats its call-outs, and `==` on the same
    // string value compares its bits only, which is cheaper than hashing it.
    private var last: (string: String, id: UInt32)?
    // The table's generation the ids are of.
    private var generation: UInt32 = 0

    /// The id of `string` in `names`, added when new.
    mutating func id(_ string: String, in names: LoopNames) -> UInt32 {
      let current = names.generation.load(ordering: .relaxed)
      if current != generation {
        ids.removeAll()
        last = nil
        generation = current
      }
      if let last, last.string == string { return last.id }
      if let known = ids[string] {
        last = (string, known)
        return known
      }
      let (id, renewed) = names.add(string)
      if renewed {
        ids.removeAll()
        generation = names.generation.load(ordering: .relaxed)
      }
      ids[string] = id
      last = (string, id)
      return id
    }
  }
}
