/// Which key a ``_TimerHeap`` orders by.
enum _TimerHeapOrder {
  /// `(fireDate, sequence)`: the order timers fire in.
  case fire
  /// `(fireDate + tolerance, sequence)`: the latest instant the loop may wake.
  case wake
}

/// One timer in one heap: its key in this heap's order (a copy, so that comparisons read
/// only the heap's contiguous array and never the timer) and the timer: 32 bytes.
///
/// The node holds its timer by an `Unmanaged` reference that owns one retain, taken in
/// ``_TimerHeap/insert(_:)`` and given back in ``_TimerHeap/remove(at:)`` or
/// ``_TimerHeap/releaseAll()``: moving nodes during a sift then costs no reference counting.
struct _TimerHeapNode {
  /// The key's instant, as an offset from ``_TimerClock/origin``.
  var date: Duration
  var sequence: UInt64
  let reference: Unmanaged<LoopTimer>

  /// A node not yet owning its timer (``_TimerHeap/insert(_:)`` retains it).
  init(timer: LoopTimer, order: _TimerHeapOrder) {
    self.reference = Unmanaged.passUnretained(timer)
    (date, sequence) = _TimerHeap.key(of: timer.entry, order: order)
  }

  var timer: LoopTimer { reference.takeUnretainedValue() }

  var key: (Duration, UInt64) { (date, sequence) }
}

/// An indexed binary min-heap of timers, in the manner of libuv's timer heap: ordered by
/// (deadline, insertion sequence) so equal deadlines come out in insertion order.
///
/// We write our own instead of using swift-collections' `Heap` because `Heap` can only pop
/// its minimum (or maximum): cancelling or rescheduling a timer in the middle of it would
/// cost a linear search and a rebuild. Here every node's position is stored in the timer's
/// slot, so insert, remove and update are all O(log n), and updating a repeating timer after
/// it fires moves a node without allocating.
///
/// The heap is 4-ary: half the levels of a binary heap, so half the position write-backs
/// into timers (each a likely cache miss), for more comparisons of keys that sit next to
/// each other in the array. Sifts move a hole instead of swapping, so each node that moves
/// has its position written once.
struct _TimerHeap {
  /// Children per node.
  static let arity = 4
  let order: _TimerHeapOrder
  /// The position of the heap's mode key in the scheduler's table: which of a timer's slots
  /// holds its position here.
  let heapIndex: Int
  private(set) var nodes: [_TimerHeapNode] = []

  init(order: _TimerHeapOrder, heapIndex: Int) {
    self.order = order
    self.heapIndex = heapIndex
  }

  var count: Int { nodes.count }

  /// The node with the smallest key.
  var top: _TimerHeapNode? { nodes.first }

  /// The key of `entry` in `order`.
  static func key(of entry: _TimerEntry, order: _TimerHeapOrder)
    -> (Duration, UInt64)
  {
    switch order {
    case .fire: return (entry.fireOffset, entry.sequence)
    case .wake: return (entry.fireOffset + entry.tolerance, entry.sequence)
    }
  }

  mutating func insert(_ node: _TimerHeapNode) {
    _ = node.reference.retain()
    nodes.append(node)
    siftUp(nodes.count - 1)
  }

  mutating func remove(at index: Int) {
    let removed = nodes[index]
    let last = nodes.removeLast()
    if index < nodes.count {
      // The last node fills the hole; its key is its own, so no refresh is needed.
      nodes[index] = last
      sift(index)
    }
    Self.setPosition(of: removed, to: -1, order: order, heapIndex: heapIndex)
    // Callers hold the timer, so this is never its last reference.
    removed.reference.release()
  }

  /// Empties the heap, giving back every node's retain (the scheduler's end). May free
  /// timers and what their handlers captured: call it holding no lock.
  mutating func releaseAll() {
    let taken = nodes
    nodes = []
    for node in taken { node.reference.release() }
  }

  /// Moves the node at `index` to its place after its key changed.
  mutating func restore(at index: Int) {
    (nodes[index].date, nodes[index].sequence) = nodes[index].reference
      ._withUnsafeGuaranteedRef { Self.key(of: $0.entry, order: order) }
    sift(index)
  }

  private mutating func sift(_ index: Int) {
    if !siftUp(index) { siftDown(index) }
  }

  /// The latest fire date that is at most `limit`, or `nil` when every fire date is later.
  /// Fire-order heap only. Visits only the nodes whose fire date is at most `limit` (and
  /// their children): a subtree whose root is later than `limit` holds nothing earlier.
  func latestFireDate(atMost limit: ContinuousClock.Instant) -> ContinuousClock.Instant? {
    latestFireDate(from: 0, atMost: _TimerClock.offset(of: limit), best: nil)
      .map(_TimerClock.instant(at:))
  }

  private func latestFireDate(
    from index: Int, atMost limit: Duration, best: Duration?
  ) -> Duration? {
    guard index < nodes.count else { return best }
    let date = nodes[index].date
    guard date <= limit else { return best }
    var best = max(best ?? date, date)
    if best == limit { return best }
    for child in children(of: index) {
      best = latestFireDate(from: child, atMost: limit, best: best) ?? best
    }
    return best
  }

  /// The first node in fire order whose fire date is at most `now` and whose sequence is
  /// below `horizon`, and its key. Fire-order heap only. A node that fails only the sequence
  /// test (a timer rescheduled during the current round) does not hide its subtree; a
  /// subtree whose root is later than `now`, or not before the best found, is skipped.
  func firstDue(now: ContinuousClock.Instant, before horizon: UInt64)
    -> (node: _TimerHeapNode, key: (Duration, UInt64))?
  {
    var best: (node: _TimerHeapNode, key: (Duration, UInt64))?
    firstDue(from: 0, now: _TimerClock.offset(of: now), horizon: horizon, best: &best)
    return best
  }

  private func firstDue(
    from index: Int, now: Duration, horizon: UInt64,
    best: inout (node: _TimerHeapNode, key: (Duration, UInt64))?
  ) {
    guard index < nodes.count else { return }
    let key = nodes[index].key
    guard key.0 <= now, best.map({ key < $0.key }) ?? true else { return }
    if key.1 < horizon {
      // Every node below has a larger key.
      best = (nodes[index], key)
      return
    }
    for child in children(of: index) {
      firstDue(from: child, now: now, horizon: horizon, best: &best)
    }
  }

  /// Whether every parent's key is at most its children's and every stored position is
  /// right (for tests).
  func isConsistent() -> Bool {
    for index in nodes.indices {
      let entry = nodes[index].timer.entry
      let slot = entry.slots[entry.slots.index(ofHeap: heapIndex)]
      if (order == .fire ? slot.fireIndex : slot.wakeIndex) != index { return false }
      if Self.key(of: nodes[index].timer.entry, order: order) != nodes[index].key { return false }
      if index > 0, nodes[index].key < nodes[(index - 1) / Self.arity].key { return false }
    }
    return true
  }

  /// The positions of `index`'s children.
  private func children(of index: Int) -> Range<Int> {
    let first = Self.arity * index + 1
    return min(first, nodes.count)..<min(first + Self.arity, nodes.count)
  }

  /// Moves the node at `start` up while it is smaller than its parent; records its position
  /// and the positions of the nodes it passes. Returns whether it moved.
  @discardableResult
  private mutating func siftUp(_ start: Int) -> Bool {
    let (order, heapIndex) = (order, heapIndex)
    return nodes.withUnsafeMutableBufferPointer { buffer in
      let moving = buffer[start]
      var index = start
      while index > 0 {
        let parent = (index - 1) / Self.arity
        guard moving.key < buffer[parent].key else { break }
        buffer[index] = buffer[parent]
        Self.setPosition(of: buffer[index], to: index, order: order, heapIndex: heapIndex)
        index = parent
      }
      buffer[index] = moving
      Self.setPosition(of: moving, to: index, order: order, heapIndex: heapIndex)
      return index != start
    }
  }

  /// Moves the node at `start` down while a child is smaller; records its position and the
  /// positions of the nodes it passes.
  private mutating func siftDown(_ start: Int) {
    let (order, heapIndex) = (order, heapIndex)
    nodes.withUnsafeMutableBufferPointer { buffer in
      let count = buffer.count
      let moving = buffer[start]
      var index = start
      while true {
        let first = Self.arity * index + 1
        guard first < count else { break }
        var child = first
        var next = first + 1
        let end = min(first + Self.arity, count)
        while next < end {
          if buffer[next].key < buffer[child].key { child = next }
          next += 1
        }
        guard buffer[child].key < moving.key else { break }
        buffer[index] = buffer[child]
        Self.setPosition(of: buffer[index], to: index, order: order, heapIndex: heapIndex)
        index = child
      }
      buffer[index] = moving
      Self.setPosition(of: moving, to: index, order: order, heapIndex: heapIndex)
    }
  }

  private static func setPosition(
    of node: _TimerHeapNode, to index: Int, order: _TimerHeapOrder, heapIndex: Int
  ) {
    node.reference._withUnsafeGuaranteedRef { timer in
      let slot = timer.entry.slots.index(ofHeap: heapIndex)
      switch order {
      case .fire: timer.entry.slots[slot].fireIndex = index
      case .wake: timer.entry.slots[slot].wakeIndex = index
      }
    }
  }
}
