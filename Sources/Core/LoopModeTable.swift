/// An item a run loop schedules in modes and runs in `order` (sources, descriptor watches,
/// observers).
///
/// ```swift
/// final class Item: ModeScheduledItem {
///   let order = 0
/// }
/// ```
package protocol ModeScheduledItem: AnyObject, Sendable {
  /// Lower orders run first; equal orders run in the order the items were added.
  var order: Int { get }
}

/// Which items are in which modes of one loop, with the common-modes rule applied: an item
/// kept under ``LoopMode/common`` belongs to every mode in the loop's common-modes set.
///
/// Items of equal `order` keep the order in which they were inserted (across modes, so a
/// mode's own items and its common items interleave by insertion too).
/// The loop keeps one table per kind of item; the Observers module keeps one for observers.
/// The table is a plain value: guard it with the lock that guards the loop's other state.
///
/// ```swift
/// var table = LoopModeTable<Item>()
/// table.insert(item, in: .common)
/// let running = table.resolved(for: .default, commonModes: [.default])  // [item]
/// ```
package struct LoopModeTable<Item: ModeScheduledItem> {
  private struct Entry {
    // `nil` once the item is removed: the entry stays as a gap until the next compaction,
    // and does not keep the item alive.
    var item: Item?
    let order: Int
    let stamp: UInt64

    func precedes(_ order: Int, _ stamp: UInt64) -> Bool {
      (self.order, self.stamp) < (order, stamp)
    }
  }

  /// One mode's items. `live` says which are there (by identity, with the stamp of their
  /// entry); `ordered` holds their entries in run order, ascending by (order, stamp), with
  /// gaps where items were removed (`gaps` of them), skipped on reading and dropped once they
  /// outnumber the items. So adding (in the usual case: an order no lower than the last
  /// one's) takes constant time and removing logarithmic time (a binary search for its
  /// entry), amortized, and a mode's items read in order in linear time: 100,000 sources
  /// added one at a time and invalidated took 102 s and 64 s when each change copied and
  /// scanned the mode's array.
  private struct ModeItems {
    var live: [ObjectIdentifier: UInt64] = [:]
    var ordered: [Entry] = []
    var gaps = 0

    /// The index of the first entry not before (`order`, `stamp`), and the steps taken.
    func position(_ order: Int, _ stamp: UInt64) -> (index: Int, steps: Int) {
      var low = 0
      var high = ordered.count
      var steps = 0
      while low < high {
        let middle = (low + high) / 2
        if ordered[middle].precedes(order, stamp) { low = middle + 1 } else { high = middle }
        steps += 1
      }
      return (low, steps)
    }
  }

  private var byMode: [LoopMode: ModeItems] = [:]
  private var resolvedCache: [LoopMode: [Item]] = [:]
  private var nextStamp: UInt64 = 0
  /// Entries looked at or moved by changes and resolutions: what a test of the table's
  /// complexity counts (time would measure the machine).
  package private(set) var work = 0

  /// Creates an empty table.
  ///
  /// ```swift
  /// var sources = LoopModeTable<CustomInputSource>()
  /// ```
  package init() {}

  /// The modes (possibly including ``LoopMode/common``) that hold at least one item.
  ///
  /// ```swift
  /// table.insert(item, in: .common)
  /// table.modes  // [.common]
  /// ```
  package var modes: [LoopMode] { Array(byMode.keys) }

  /// Whether no item is in any mode.
  ///
  /// ```swift
  /// LoopModeTable<CustomInputSource>().isEmpty  // true
  /// ```
  package var isEmpty: Bool { byMode.isEmpty }

  /// Adds `item` to `mode` (which may be ``LoopMode/common``); returns `false` when it was
  /// already there.
  ///
  /// ```swift
  /// table.insert(item, in: .default)  // true
  /// table.insert(item, in: .default)  // false: already there
  /// ```
  @discardableResult
  package mutating func insert(_ item: Item, in mode: LoopMode) -> Bool {
    let id = ObjectIdentifier(item)
    if byMode[mode]?.live[id] != nil { return false }
    nextStamp &+= 1
    let entry = Entry(item: item, order: item.order, stamp: nextStamp)
    var moved = 0
    // In place: a copy of the mode's items per change made adding n items O(n²).
    modifyItems(of: mode) { items in
      items.live[id] = entry.stamp
      // Stamps only grow, so the new entry goes after every entry of the same order: at the
      // end unless an entry has a higher order (then where a binary search puts it).
      if let last = items.ordered.last, last.order > entry.order {
        let (index, steps) = items.position(entry.order, entry.stamp)
        moved += steps + items.ordered.count - index
        items.ordered.insert(entry, at: index)
      } else {
        items.ordered.append(entry)
      }
    }
    work += 1 + moved
    resolvedCache.removeAll(keepingCapacity: true)
    return true
  }

  /// Removes `item` from `mode`; returns `false` when it was not there.
  ///
  /// ```swift
  /// table.remove(item, from: .default)  // false when it was not there
  /// ```
  @discardableResult
  package mutating func remove(_ item: Item, from mode: LoopMode) -> Bool {
    let id = ObjectIdentifier(item)
    guard let stamp = byMode[mode]?.live[id] else { return false }
    var emptied = false
    var steps = 0
    modifyItems(of: mode) { items in
      items.live[id] = nil
      let (index, searched) = items.position(item.order, stamp)
      steps += searched
      items.ordered[index].item = nil
      items.gaps += 1
      if items.live.isEmpty {
        emptied = true
      } else if items.gaps > items.live.count {
        // Dropping the gaps once they outnumber the items costs at most two steps per
        // removal, amortized.
        steps += items.ordered.count
        items.ordered.removeAll { $0.item == nil }
        items.gaps = 0
      }
    }
    if emptied { byMode[mode] = nil }
    work += 1 + steps
    resolvedCache.removeAll(keepingCapacity: true)
    return true
  }

  /// Mutates the items of `mode` in place (created empty when missing).
  private mutating func modifyItems(of mode: LoopMode, _ body: (inout ModeItems) -> Void) {
    body(&byMode[mode, default: ModeItems()])
  }

  /// Whether `item` was added to exactly `mode` (not through ``LoopMode/common``).
  ///
  /// ```swift
  /// table.insert(item, in: .common)
  /// table.contains(item, in: .default)  // false: it is there only through .common
  /// ```
  package func contains(_ item: Item, in mode: LoopMode) -> Bool {
    byMode[mode]?.live[ObjectIdentifier(item)] != nil
  }

  /// Whether `item` is in any mode (possibly ``LoopMode/common``): O(number of modes).
  ///
  /// ```swift
  /// if !table.isScheduled(item) { forget(item) }
  /// ```
  package func isScheduled(_ item: Item) -> Bool {
    let id = ObjectIdentifier(item)
    return byMode.values.contains { $0.live[id] != nil }
  }

  /// The modes (possibly including ``LoopMode/common``) that `item` was added to.
  ///
  /// ```swift
  /// table.modes(of: item)  // [.default, .common], in no particular order
  /// ```
  package func modes(of item: Item) -> [LoopMode] {
    let id = ObjectIdentifier(item)
    return byMode.compactMap { mode, items in items.live[id] != nil ? mode : nil }
  }

  /// The items added directly to `mode` (or to ``LoopMode/common`` when `mode` is `.common`),
  /// in run order.
  ///
  /// ```swift
  /// let commonItems = table.items(in: .common)
  /// ```
  package func items(in mode: LoopMode) -> [Item] {
    byMode[mode]?.ordered.compactMap(\.item) ?? []
  }

  /// The items that take part in a run in `mode`: those added to it and, when it is a common
  /// mode, those added to ``LoopMode/common``, in ascending order (ties in insertion order),
  /// each once. Cached until the table changes or ``commonModesDidChange()`` is called.
  ///
  /// ```swift
  /// for item in table.resolved(for: .default, commonModes: [.default]) { run(item) }
  /// ```
  package mutating func resolved(for mode: LoopMode, commonModes: Set<LoopMode>) -> [Item] {
    if let cached = resolvedCache[mode] { return cached }
    let result = items(for: mode, commonModes: commonModes)
    resolvedCache[mode] = result
    return result
  }

  /// The items that take part in a run in `mode`, as ``resolved(for:commonModes:)`` gives
  /// them, worked out afresh: a read that leaves the table (and its cache) as it is. Linear:
  /// the mode's items and the common ones are each in run order already, so they are merged,
  /// not sorted, and an item in both is found by identity, not by a scan.
  ///
  /// ```swift
  /// let running = table.items(for: .default, commonModes: [.default])
  /// ```
  package func items(for mode: LoopMode, commonModes: Set<LoopMode>) -> [Item] {
    let own = byMode[mode]
    guard commonModes.contains(mode), mode != .common, let common = byMode[.common] else {
      return items(in: mode)
    }
    guard let own else { return items(in: .common) }
    var result: [Item] = []
    result.reserveCapacity(own.live.count + common.live.count)
    var first = 0
    var second = 0
    while first < own.ordered.count || second < common.ordered.count {
      let takeOwn: Bool
      if first == own.ordered.count {
        takeOwn = false
      } else if second == common.ordered.count {
        takeOwn = true
      } else {
        let other = common.ordered[second]
        takeOwn = own.ordered[first].precedes(other.order, other.stamp)
      }
      if takeOwn {
        if let item = own.ordered[first].item { result.append(item) }
        first += 1
      } else {
        // An item in both appears once, where its own mode's entry puts it.
        if let item = common.ordered[second].item, own.live[ObjectIdentifier(item)] == nil {
          result.append(item)
        }
        second += 1
      }
    }
    return result
  }

  /// Whether a run in `mode` would see any item.
  ///
  /// ```swift
  /// if !table.hasItems(for: mode, commonModes: commonModes) { return .finished }
  /// ```
  package func hasItems(for mode: LoopMode, commonModes: Set<LoopMode>) -> Bool {
    if byMode[mode] != nil { return true }
    return commonModes.contains(mode) && byMode[.common] != nil
  }

  /// Drops cached resolutions; call it when the loop's common-modes set changes.
  ///
  /// ```swift
  /// commonModes.insert("tracking")
  /// table.commonModesDidChange()
  /// ```
  package mutating func commonModesDidChange() {
    resolvedCache.removeAll(keepingCapacity: true)
  }
}
