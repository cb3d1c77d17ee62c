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
/// mode's own items and its common items interleave by insertion too). Adding and removing
/// take constant time; run order is worked out (by sorting) only when asked for.
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
    let item: Item
    let order: Int
    let stamp: UInt64

    func precedes(_ other: Entry) -> Bool {
      (order, stamp) < (other.order, other.stamp)
    }
  }

  /// One mode's items, by identity, each with its `order` and the stamp of its insertion.
  /// A hash table and nothing else: adding and removing take constant time, amortized,
  /// whatever the items' orders. Run order is worked out only when asked for (by sorting),
  /// because the loop's hot paths never ask: step 4 reads the signalled sources alone and
  /// sorts those, and descriptor watches are looked up by identity. Kept sorted, a mode's
  /// items would cost O(n) per change for an item of a lower order than the mode's highest.
  private typealias ModeItems = [ObjectIdentifier: Entry]

  private var byMode: [LoopMode: ModeItems] = [:]
  private var resolvedCache: [LoopMode: [Item]] = [:]
  private var nextStamp: UInt64 = 0
  /// Entries looked at by changes and resolutions: what a test of the table's complexity
  /// counts (time would measure the machine).
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
  /// already there. O(1), amortized.
  ///
  /// ```swift
  /// table.insert(item, in: .default)  // true
  /// table.insert(item, in: .default)  // false: already there
  /// ```
  @discardableResult
  package mutating func insert(_ item: Item, in mode: LoopMode) -> Bool {
    let id = ObjectIdentifier(item)
    if byMode[mode]?[id] != nil { return false }
    nextStamp &+= 1
    // In place: a copy of the mode's items per change made adding n items O(n²).
    byMode[mode, default: [:]][id] = Entry(item: item, order: item.order, stamp: nextStamp)
    work += 1
    resolvedCache.removeAll(keepingCapacity: true)
    return true
  }

  /// Removes `item` from `mode`; returns `false` when it was not there. O(1), amortized.
  ///
  /// ```swift
  /// table.remove(item, from: .default)  // false when it was not there
  /// ```
  @discardableResult
  package mutating func remove(_ item: Item, from mode: LoopMode) -> Bool {
    let id = ObjectIdentifier(item)
    guard byMode[mode]?.removeValue(forKey: id) != nil else { return false }
    if byMode[mode]?.isEmpty == true { byMode[mode] = nil }
    work += 1
    resolvedCache.removeAll(keepingCapacity: true)
    return true
  }

  /// Whether `item` was added to exactly `mode` (not through ``LoopMode/common``).
  ///
  /// ```swift
  /// table.insert(item, in: .common)
  /// table.contains(item, in: .default)  // false: it is there only through .common
  /// ```
  package func contains(_ item: Item, in mode: LoopMode) -> Bool {
    byMode[mode]?[ObjectIdentifier(item)] != nil
  }

  /// Whether `item` is in any mode (possibly ``LoopMode/common``): O(number of modes).
  ///
  /// ```swift
  /// if !table.isScheduled(item) { forget(item) }
  /// ```
  package func isScheduled(_ item: Item) -> Bool {
    let id = ObjectIdentifier(item)
    return byMode.values.contains { $0[id] != nil }
  }

  /// The modes (possibly including ``LoopMode/common``) that `item` was added to.
  ///
  /// ```swift
  /// table.modes(of: item)  // [.default, .common], in no particular order
  /// ```
  package func modes(of item: Item) -> [LoopMode] {
    let id = ObjectIdentifier(item)
    return byMode.compactMap { mode, items in items[id] != nil ? mode : nil }
  }

  /// The items added directly to `mode` (or to ``LoopMode/common`` when `mode` is `.common`),
  /// in run order: O(n log n), for the rare callers that want them all.
  ///
  /// ```swift
  /// let commonItems = table.items(in: .common)
  /// ```
  package func items(in mode: LoopMode) -> [Item] {
    guard let items = byMode[mode] else { return [] }
    return items.values.sorted { $0.precedes($1) }.map(\.item)
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
    work += result.count
    resolvedCache[mode] = result
    return result
  }

  /// The items that take part in a run in `mode`, as ``resolved(for:commonModes:)`` gives
  /// them, worked out afresh: a read that leaves the table (and its cache) as it is.
  /// O(n log n): the mode's items and the common ones not among them, sorted.
  ///
  /// ```swift
  /// let running = table.items(for: .default, commonModes: [.default])
  /// ```
  package func items(for mode: LoopMode, commonModes: Set<LoopMode>) -> [Item] {
    guard commonModes.contains(mode), mode != .common, let common = byMode[.common] else {
      return items(in: mode)
    }
    guard let own = byMode[mode] else { return items(in: .common) }
    var entries = Array(own.values)
    entries.reserveCapacity(own.count + common.count)
    // An item in both appears once, where its own mode's entry puts it.
    for (id, entry) in common where own[id] == nil { entries.append(entry) }
    entries.sort { $0.precedes($1) }
    return entries.map(\.item)
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
