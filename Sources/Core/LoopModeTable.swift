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
    let item: Item
    let stamp: UInt64
  }

  private var byMode: [LoopMode: [Entry]] = [:]
  private var resolvedCache: [LoopMode: [Item]] = [:]
  private var nextStamp: UInt64 = 0

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
    var entries = byMode[mode, default: []]
    if entries.contains(where: { $0.item === item }) { return false }
    nextStamp &+= 1
    let entry = Entry(item: item, stamp: nextStamp)
    // Stamps only grow, so the new entry goes after every entry of the same order.
    let position = entries.firstIndex { $0.item.order > item.order } ?? entries.endIndex
    entries.insert(entry, at: position)
    byMode[mode] = entries
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
    guard var entries = byMode[mode], let index = entries.firstIndex(where: { $0.item === item })
    else {
      return false
    }
    entries.remove(at: index)
    byMode[mode] = entries.isEmpty ? nil : entries
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
    byMode[mode]?.contains { $0.item === item } ?? false
  }

  /// The modes (possibly including ``LoopMode/common``) that `item` was added to.
  ///
  /// ```swift
  /// table.modes(of: item)  // [.default, .common], in no particular order
  /// ```
  package func modes(of item: Item) -> [LoopMode] {
    byMode.compactMap { mode, entries in entries.contains { $0.item === item } ? mode : nil }
  }

  /// The items added directly to `mode` (or to ``LoopMode/common`` when `mode` is `.common`),
  /// in run order.
  ///
  /// ```swift
  /// let commonItems = table.items(in: .common)
  /// ```
  package func items(in mode: LoopMode) -> [Item] {
    byMode[mode]?.map(\.item) ?? []
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
  /// them, worked out afresh: a read that leaves the table (and its cache) as it is.
  ///
  /// ```swift
  /// let running = table.items(for: .default, commonModes: [.default])
  /// ```
  package func items(for mode: LoopMode, commonModes: Set<LoopMode>) -> [Item] {
    var entries = byMode[mode] ?? []
    if commonModes.contains(mode), let common = byMode[.common] {
      for entry in common where !entries.contains(where: { $0.item === entry.item }) {
        entries.append(entry)
      }
      entries.sort { ($0.item.order, $0.stamp) < ($1.item.order, $1.stamp) }
    }
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
