/// Which key a ``_TimerHeap`` orders by.
enum _TimerHeapOrder {
  /// `(fireDate, sequence)`: the order timers fire in.
  case fire
  /// `(fireDate + tolerance, sequence)`: the latest instant the loop may wake (used only
  /// by `_TolerantTimers`).
  case wake
}

/// A min-heap of timers ordered by `(key, sequence)`, so that timers with equal keys come
/// out in the order they were scheduled: the heap of libuv's timer.c, with the same three
/// operations (insert, remove, and the fix-up after a key changed) and the same intrusive
/// index: each timer records its own position, so removing or moving any timer is
/// O(log n) with no search. (swift-collections' `Heap` can only pop its minimum.)
///
/// Two choices differ from libuv's pointer-linked binary heap, both for the cache:
/// - the nodes live in one array, and each holds a copy of its key next to its timer (16
///   bytes, four to a cache line), so comparisons read the array, not the timers; the
///   sequence is read from the timer only when two keys are equal;
/// - the heap is 4-ary: half the levels of a binary heap, so half the position write-backs
///   into timers (each a likely cache miss) for a few more comparisons of neighbouring
///   keys. Sifts move a hole rather than swapping, so a node that moves is written once.
///
/// A node owns one retain of its timer, taken by ``insert(_:)`` and given back by
/// ``remove(at:)`` or ``releaseAll()``; moving nodes costs no reference counting. The
/// array doubles as it grows and never shrinks (at 10,000 timers, 16,384 nodes: 26 bytes
/// a timer).
struct _TimerHeap {
  struct Node {
    /// The timer's key in this heap's order (see ``LoopTimer/heapKey(_:)``).
    var key: Int64
    let timer: Unmanaged<LoopTimer>

    /// The timer's insertion sequence, read only to break ties of keys.
    var sequence: UInt64 { timer._withUnsafeGuaranteedRef { $0.sequence } }

    /// Whether `self` comes out before `other`.
    func precedes(_ other: Node) -> Bool {
      key != other.key ? key < other.key : sequence < other.sequence
    }
  }

  static let arity = 4
  let order: _TimerHeapOrder
  /// The mode key the heap belongs to: tells a timer which of its slots records the
  /// position (see ``LoopTimer/setHeapPosition(_:mode:order:)``).
  let mode: Int
  private(set) var nodes: [Node] = []

  init(order: _TimerHeapOrder, mode: Int) {
    self.order = order
    self.mode = mode
  }

  var count: Int { nodes.count }
  var top: Node? { nodes.first }

  mutating func insert(_ timer: LoopTimer) {
    let node = Node(key: timer.heapKey(order), timer: Unmanaged.passRetained(timer))
    nodes.append(node)
    siftUp(node, from: nodes.count - 1)
  }

  mutating func remove(at index: Int) {
    let removed = nodes[index]
    let last = nodes.removeLast()
    if index < nodes.count { update(last, at: index) }
    removed.timer._withUnsafeGuaranteedRef {
      $0.setHeapPosition(-1, mode: mode, order: order)
    }
    // Callers hold the timer: this is never its last reference.
    removed.timer.release()
  }

  /// Moves the node at `index` to its place after its timer's key changed.
  mutating func update(at index: Int) {
    var node = nodes[index]
    node.key = node.timer._withUnsafeGuaranteedRef { $0.heapKey(order) }
    update(node, at: index)
  }

  /// Empties the heap, giving back every node's retain. May free timers and what their
  /// handlers captured: call it holding no lock.
  mutating func releaseAll() {
    let taken = nodes
    nodes = []
    for node in taken { node.timer.release() }
  }

  /// Puts `node` in the hole at `index`, moving it up or down to its place.
  private mutating func update(_ node: Node, at index: Int) {
    if index > 0, node.precedes(nodes[(index - 1) / Self.arity]) {
      siftUp(node, from: index)
    } else {
      siftDown(node, from: index)
    }
  }

  /// Moves the hole at `index` up until `node` fits in it, then puts `node` there.
  private mutating func siftUp(_ node: Node, from index: Int) {
    let (order, mode) = (order, mode)
    nodes.withUnsafeMutableBufferPointer { buffer in
      var index = index
      while index > 0 {
        let parent = (index - 1) / Self.arity
        guard node.precedes(buffer[parent]) else { break }
        Self.place(buffer[parent], at: index, in: buffer, order: order, mode: mode)
        index = parent
      }
      Self.place(node, at: index, in: buffer, order: order, mode: mode)
    }
  }

  /// Moves the hole at `index` down until `node` fits in it, then puts `node` there.
  private mutating func siftDown(_ node: Node, from index: Int) {
    let (order, mode) = (order, mode)
    nodes.withUnsafeMutableBufferPointer { buffer in
      var index = index
      while true {
        let first = Self.arity * index + 1
        guard first < buffer.count else { break }
        var child = first
        for next in (first + 1)..<min(first + Self.arity, buffer.count)
        where buffer[next].precedes(buffer[child]) {
          child = next
        }
        guard buffer[child].precedes(node) else { break }
        Self.place(buffer[child], at: index, in: buffer, order: order, mode: mode)
        index = child
      }
      Self.place(node, at: index, in: buffer, order: order, mode: mode)
    }
  }

  private static func place(
    _ node: Node, at index: Int, in buffer: UnsafeMutableBufferPointer<Node>,
    order: _TimerHeapOrder, mode: Int
  ) {
    buffer[index] = node
    node.timer._withUnsafeGuaranteedRef { $0.setHeapPosition(index, mode: mode, order: order) }
  }

  // MARK: Queries

  /// The latest key that is at most `limit`, or `nil` when every key is later. Visits only
  /// the nodes whose key is at most `limit` (and their children): a subtree whose root is
  /// later than `limit` holds nothing earlier.
  func latestKey(atMost limit: Int64) -> Int64? {
    latestKey(from: 0, atMost: limit, best: nil)
  }

  private func latestKey(from index: Int, atMost limit: Int64, best: Int64?) -> Int64? {
    guard index < nodes.count, nodes[index].key <= limit else { return best }
    var best = max(best ?? nodes[index].key, nodes[index].key)
    if best == limit { return best }
    for child in children(of: index) {
      best = latestKey(from: child, atMost: limit, best: best) ?? best
    }
    return best
  }

  /// The first node in heap order whose key is at most `now` and whose sequence is below
  /// `horizon`, with its `(key, sequence)`. A node that fails only the sequence test (a
  /// timer rescheduled during the current round of firing) does not hide its subtree; a
  /// subtree whose root is later than `now`, or not before the best found, is skipped.
  func firstDue(now: Int64, before horizon: UInt64) -> (node: Node, rank: (Int64, UInt64))? {
    var best: (node: Node, rank: (Int64, UInt64))?
    firstDue(from: 0, now: now, horizon: horizon, best: &best)
    return best
  }

  private func firstDue(
    from index: Int, now: Int64, horizon: UInt64,
    best: inout (node: Node, rank: (Int64, UInt64))?
  ) {
    guard index < nodes.count, nodes[index].key <= now else { return }
    let rank = (nodes[index].key, nodes[index].sequence)
    guard best.map({ rank < $0.rank }) ?? true else { return }
    if rank.1 < horizon {
      // Every node below ranks later.
      best = (nodes[index], rank)
      return
    }
    for child in children(of: index) {
      firstDue(from: child, now: now, horizon: horizon, best: &best)
    }
  }

  private func children(of index: Int) -> Range<Int> {
    let first = Self.arity * index + 1
    return min(first, nodes.count)..<min(first + Self.arity, nodes.count)
  }

  /// Whether every parent precedes its children and every timer records its position and
  /// key right (for tests).
  func isConsistent() -> Bool {
    nodes.indices.allSatisfy { index in
      let timer = nodes[index].timer.takeUnretainedValue()
      return timer.heapPosition(mode: mode, order: order) == index
        && timer.heapKey(order) == nodes[index].key
        && (index == 0 || !nodes[index].precedes(nodes[(index - 1) / Self.arity]))
    }
  }
}
