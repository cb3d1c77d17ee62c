/// Which key a ``_TimerHeap`` orders by.
enum _TimerHeapOrder {
  /// `(fireDate, sequence)`: the order timers fire in.
  case fire
  /// `(fireDate + tolerance, sequence)`: the latest instant the loop may wake.
  case wake
}

/// One timer in one heap: its date key in this heap's order (a copy, so that comparisons
/// read only the heap's contiguous array and never the timer, unless two dates are equal)
/// and the timer: 16 bytes, four to a cache line, which is what a 4-ary sift reads.
///
/// The node holds its timer by an `Unmanaged` reference that owns one retain, taken in
/// ``_TimerHeap/insert(_:)`` and given back in ``_TimerHeap/remove(at:)`` or
/// ``_TimerHeap/releaseAll()``: moving nodes during a sift then costs no reference counting.
struct _TimerHeapNode {
  /// The key's instant, in nanoseconds from ``_TimerClock/origin`` (see there).
  var date: Int64
  let reference: Unmanaged<LoopTimer>

  /// A node not yet owning its timer (``_TimerHeap/insert(_:)`` retains it).
  init(timer: LoopTimer, order: _TimerHeapOrder) {
    self.reference = Unmanaged.passUnretained(timer)
    self.date = timer.heapKey(order)
  }

  var timer: LoopTimer { reference.takeUnretainedValue() }

  /// The insertion sequence, read from the timer (ties of dates only).
  var sequence: UInt64 { reference._withUnsafeGuaranteedRef { $0.sequence } }

  var key: (Int64, UInt64) { (date, sequence) }

  /// Whether `self` comes before `other`: by date, then by sequence.
  @inline(__always)
  func precedes(_ other: _TimerHeapNode) -> Bool {
    if date != other.date { return date < other.date }
    return sequence < other.sequence
  }
}

/// An indexed 4-ary min-heap of timers, in the manner of libuv's timer heap: ordered by
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
///
/// The node array grows by doubling (Swift's `Array`) and never shrinks: at 10,000 timers
/// its capacity is 16,384 nodes, 26 bytes a timer.
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
    removed.reference._withUnsafeGuaranteedRef {
      $0.setHeapPosition(-1, heap: heapIndex, order: order)
    }
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
    nodes[index].date = nodes[index].reference._withUnsafeGuaranteedRef { $0.heapKey(order) }
    sift(index)
  }

  private mutating func sift(_ index: Int) {
    if !siftUp(index) { siftDown(index) }
  }

  /// The latest fire date that is at most `limit`, or `nil` when every fire date is later.
  /// Fire-order heap only. Visits only the nodes whose fire date is at most `limit` (and
  /// their children): a subtree whose root is later than `limit` holds nothing earlier.
  func latestFireKey(atMost limit: Int64) -> Int64? {
    latestFireKey(from: 0, atMost: limit, best: nil)
  }

  private func latestFireKey(from index: Int, atMost limit: Int64, best: Int64?) -> Int64? {
    guard index < nodes.count else { return best }
    let date = nodes[index].date
    guard date <= limit else { return best }
    var best = max(best ?? date, date)
    if best == limit { return best }
    for child in children(of: index) {
      best = latestFireKey(from: child, atMost: limit, best: best) ?? best
    }
    return best
  }

  /// The first node in fire order whose fire date is at most `now` and whose sequence is
  /// below `horizon`, and its key. Fire-order heap only. A node that fails only the sequence
  /// test (a timer rescheduled during the current round) does not hide its subtree; a
  /// subtree whose root is later than `now`, or not before the best found, is skipped.
  func firstDue(now: Int64, before horizon: UInt64)
    -> (node: _TimerHeapNode, key: (Int64, UInt64))?
  {
    var best: (node: _TimerHeapNode, key: (Int64, UInt64))?
    firstDue(from: 0, now: now, horizon: horizon, best: &best)
    return best
  }

  private func firstDue(
    from index: Int, now: Int64, horizon: UInt64,
    best: inout (node: _TimerHeapNode, key: (Int64, UInt64))?
  ) {
    guard index < nodes.count else { return }
    let date = nodes[index].date
    guard date <= now else { return }
    let key = (date, nodes[index].sequence)
    guard best.map({ key < $0.key }) ?? true else { return }
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
      let timer = nodes[index].timer
      if timer.heapPosition(heap: heapIndex, order: order) != index { return false }
      if timer.heapKey(order) != nodes[index].date { return false }
      if index > 0, nodes[index].precedes(nodes[(index - 1) / Self.arity]) { return false }
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
        guard moving.precedes(buffer[parent]) else { break }
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
          if buffer[next].precedes(buffer[child]) { child = next }
          next += 1
        }
        guard buffer[child].precedes(moving) else { break }
        buffer[index] = buffer[child]
        Self.setPosition(of: buffer[index], to: index, order: order, heapIndex: heapIndex)
        index = child
      }
      buffer[index] = moving
      Self.setPosition(of: moving, to: index, order: order, heapIndex: heapIndex)
    }
  }

  @inline(__always)
  private static func setPosition(
    of node: _TimerHeapNode, to index: Int, order: _TimerHeapOrder, heapIndex: Int
  ) {
    node.reference._withUnsafeGuaranteedRef {
      $0.setHeapPosition(index, heap: heapIndex, order: order)
    }
  }
}
