import Synchronization

/// An item a run loop schedules in modes and runs in `order` (sources, descriptor watches,
/// observers).
///
/// ```swift
/// final class Item: ModeScheduledItem {
///   let order = 0
///   let sequence = ModeScheduledSequence.next()
/// }
/// ```
public protocol ModeScheduledItem: AnyObject, Sendable {
  /// Lower orders run first.
  var order: Int { get }
  /// Breaks ties of `order`: items of equal order run in the order they were created.
  var sequence: UInt64 { get }
}

/// Which items are in which modes of one loop, with the common-modes rule applied: an item
/// kept under ``LoopMode/common`` belongs to every mode in the loop's common-modes set.
///
/// The loop keeps one table per kind of item; the Observers module keeps one for observers.
/// The table is a plain value: guard it with the lock that guards the loop's other state.
///
/// ```swift
/// var table = LoopModeTable<Item>()
/// table.insert(item, in: .common)
/// let running = table.resolved(for: .default, commonModes: [.default])  // [item]
/// ```
public struct LoopModeTable<Item: ModeScheduledItem> {
  private var byMode: [LoopMode: [Item]] = [:]
  private var resolvedCache: [LoopMode: [Item]] = [:]

  /// Creates an empty table.
  public init() {}

  /// The modes (possibly including ``LoopMode/common``) that hold at least one item.
  public var modes: [LoopMode] { Array(byMode.keys) }

  /// Whether no item is in any mode.
  public var isEmpty: Bool { byMode.isEmpty }

  /// Adds `item` to `mode` (which may be ``LoopMode/common``); returns `false` when it was
  /// already there.
  @discardableResult
  public mutating func insert(_ item: Item, in mode: LoopMode) -> Bool {
    var items = byMode[mode, default: []]
    if items.contains(where: { $0 === item }) { return false }
    let position =
      items.firstIndex { ($0.order, $0.sequence) > (item.order, item.sequence) } ?? items.endIndex
    items.insert(item, at: position)
    byMode[mode] = items
    resolvedCache.removeAll(keepingCapacity: true)
    return true
  }

  /// Removes `item` from `mode`; returns `false` when it was not there.
  @discardableResult
  public mutating func remove(_ item: Item, from mode: LoopMode) -> Bool {
    guard var items = byMode[mode], let index = items.firstIndex(where: { $0 === item }) else {
      return false
    }
    items.remove(at: index)
    byMode[mode] = items.isEmpty ? nil : items
    resolvedCache.removeAll(keepingCapacity: true)
    return true
  }

  /// Whether `item` was added to exactly `mode` (not through ``LoopMode/common``).
  public func contains(_ item: Item, in mode: LoopMode) -> Bool {
    byMode[mode]?.contains { $0 === item } ?? false
  }

  /// The modes (possibly including ``LoopMode/common``) that `item` was added to.
  public func modes(of item: Item) -> [LoopMode] {
    byMode.compactMap { mode, items in items.contains { $0 === item } ? mode : nil }
  }

  /// The items added directly to `mode` (or to ``LoopMode/common`` when `mode` is `.common`).
  public func items(in mode: LoopMode) -> [Item] {
    byMode[mode] ?? []
  }

  /// The items that take part in a run in `mode`: those added to it and, when it is a common
  /// mode, those added to ``LoopMode/common``, in ascending order (ties in creation order),
  /// each once. Cached until the table changes or ``commonModesDidChange()`` is called.
  public mutating func resolved(for mode: LoopMode, commonModes: Set<LoopMode>) -> [Item] {
    if let cached = resolvedCache[mode] { return cached }
    var result = byMode[mode] ?? []
    if commonModes.contains(mode), let common = byMode[.common] {
      for item in common where !result.contains(where: { $0 === item }) {
        result.append(item)
      }
      result.sort { ($0.order, $0.sequence) < ($1.order, $1.sequence) }
    }
    resolvedCache[mode] = result
    return result
  }

  /// Whether a run in `mode` would see any item.
  public func hasItems(for mode: LoopMode, commonModes: Set<LoopMode>) -> Bool {
    if byMode[mode] != nil { return true }
    return commonModes.contains(mode) && byMode[.common] != nil
  }

  /// Drops cached resolutions; call it when the loop's common-modes set changes.
  public mutating func commonModesDidChange() {
    resolvedCache.removeAll(keepingCapacity: true)
  }
}

/// The counter that gives every ``ModeScheduledItem`` its creation sequence number.
///
/// ```swift
/// let sequence = ModeScheduledSequence.next()
/// ```
public enum ModeScheduledSequence {
  /// The next number, unique in the process, increasing.
  public static func next() -> UInt64 {
    scheduledItemCounter.wrappingAdd(1, ordering: .relaxed).newValue
  }
}
