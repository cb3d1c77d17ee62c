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

  /// The latest fire date that is at most `limit`, or `nil` when every fire date is later.
  /// Fire-order heap only. Visits only the nodes whose fire date is at most `limit` (and
  /// their children): a subtree whose root is later than `limit` holds nothing earlier.
  func latestFireDate(atMost limit: ContinuousClock.Instant) -> ContinuousClock.Instant? {
    latestFireDate(from: 0, atMost: limit, best: nil)
  }

  private func latestFireDate(
    from index: Int, atMost limit: ContinuousClock.Instant, best: ContinuousClock.Instant?
  ) -> ContinuousClock.Instant? {
    guard index < nodes.count else { return best }
    let date = nodes[index].timer.entry.fireDate
    guard date <= limit else { return best }
    var best = max(best ?? date, date)
    if best == limit { return best }
    best = latestFireDate(from: 2 * index + 1, atMost: limit, best: best) ?? best
    return latestFireDate(from: 2 * index + 2, atMost: limit, best: best) ?? best
  }

  /// The first node in fire order whose fire date is at most `now` and whose sequence is
  /// below `horizon`, and its key. Fire-order heap only. A node that fails only the sequence
  /// test (a timer rescheduled during the current round) does not hide its subtree; a
  /// subtree whose root is later than `now`, or not before the best found, is skipped.
  func firstDue(now: ContinuousClock.Instant, before horizon: UInt64)
    -> (node: _TimerHeapNode, key: (ContinuousClock.Instant, UInt64))?
  {
    var best: (node: _TimerHeapNode, key: (ContinuousClock.Instant, UInt64))?
    firstDue(from: 0, now: now, horizon: horizon, best: &best)
    return best
  }

  private func firstDue(
    from index: Int, now: ContinuousClock.Instant, horizon: UInt64,
    best: inout (node: _TimerHeapNode, key: (ContinuousClock.Instant, UInt64))?
  ) {
    guard index < nodes.count else { return }
    let entry = nodes[index].timer.entry
    let key = (entry.fireDate, entry.sequence)
    guard entry.fireDate <= now, best.map({ key < $0.key }) ?? true else { return }
    if entry.sequence < horizon {
      // Every node below has a larger key.
      best = (nodes[index], key)
      return
    }
    firstDue(from: 2 * index + 1, now: now, horizon: horizon, best: &best)
    firstDue(from: 2 * index + 2, now: now, horizon: horizon, best: &best)
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
