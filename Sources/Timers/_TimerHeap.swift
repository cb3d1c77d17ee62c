/// Which key a ``_TimerHeap`` orders by.
enum _TimerHeapOrder {
  /// `(fireDate, sequence)`: the order timers fire in.
  case fire
  /// `(fireDate + tolerance, sequence)`: the latest instant the loop may wake.
  case wake
}

/// One timer in one heap: the timer and which of its slots this heap belongs to.
struct _TimerHeapNode {
  let timer: LoopTimer
  let slot: Int
}

/// An indexed binary min-heap of timers, in the manner of libuv's timer heap: ordered by
/// (deadline, insertion sequence) so equal deadlines come out in insertion order.
///
/// We write our own instead of using swift-collections' `Heap` because `Heap` can only pop
/// its minimum (or maximum): cancelling or rescheduling a timer in the middle of it would
/// cost a linear search and a rebuild. Here every node's position is stored in the timer's
/// slot, so insert, remove and update are all O(log n), and updating a repeating timer after
/// it fires moves a node without allocating.
struct _TimerHeap {
  let order: _TimerHeapOrder
  private(set) var nodes: [_TimerHeapNode] = []

  init(order: _TimerHeapOrder) {
    self.order = order
  }

  var count: Int { nodes.count }

  /// The node with the smallest key.
  var top: _TimerHeapNode? { nodes.first }

  /// The key of `node` in this heap's order.
  func key(_ node: _TimerHeapNode) -> (ContinuousClock.Instant, UInt64) {
    let entry = node.timer.entry
    switch order {
    case .fire: return (entry.fireDate, entry.sequence)
    case .wake: return (entry.latest, entry.sequence)
    }
  }

  mutating func insert(_ node: _TimerHeapNode) {
    nodes.append(node)
    recordPosition(nodes.count - 1)
    siftUp(nodes.count - 1)
  }

  mutating func remove(at index: Int) {
    let last = nodes.count - 1
    if index != last { swapNodes(index, last) }
    let removed = nodes.removeLast()
    setPosition(of: removed, to: -1)
    if index < nodes.count { restore(at: index) }
  }

  /// Moves the node at `index` to its place after its key changed.
  mutating func restore(at index: Int) {
    if !siftUp(index) { siftDown(index) }
  }

  /// Whether every parent's key is at most its children's and every stored position is
  /// right (for tests).
  func isConsistent(slotIndex: (_TimerHeapNode) -> Int) -> Bool {
    for index in nodes.indices {
      if slotIndex(nodes[index]) != index { return false }
      if index > 0, less(index, (index - 1) / 2) { return false }
    }
    return true
  }

  private func less(_ lhs: Int, _ rhs: Int) -> Bool {
    key(nodes[lhs]) < key(nodes[rhs])
  }

  @discardableResult
  private mutating func siftUp(_ start: Int) -> Bool {
    var index = start
    while index > 0 {
      let parent = (index - 1) / 2
      guard less(index, parent) else { break }
      swapNodes(index, parent)
      index = parent
    }
    return index != start
  }

  private mutating func siftDown(_ start: Int) {
    var index = start
    while true {
      let left = 2 * index + 1
      guard left < nodes.count else { return }
      let right = left + 1
      let child = right < nodes.count && less(right, left) ? right : left
      guard less(child, index) else { return }
      swapNodes(index, child)
      index = child
    }
  }

  private mutating func swapNodes(_ first: Int, _ second: Int) {
    nodes.swapAt(first, second)
    recordPosition(first)
    recordPosition(second)
  }

  private func recordPosition(_ index: Int) {
    setPosition(of: nodes[index], to: index)
  }

  private func setPosition(of node: _TimerHeapNode, to index: Int) {
    switch order {
    case .fire: node.timer.entry.slots[node.slot].fireIndex = index
    case .wake: node.timer.entry.slots[node.slot].wakeIndex = index
    }
  }
}
