/// A min-heap of timers ordered by `(key, sequence)`: a timer's date key, then the order it
/// was scheduled in, so that equal dates fire in insertion order (libuv's timer heap).
///
/// Each timer records its own position (``LoopTimer/heapIndex``, the one field of a timer
/// the heap writes, as libuv embeds its heap node in the timer), so removing or moving any
/// timer is O(log n) with no search. Two choices differ from libuv's pointer-linked binary
/// heap, both for the cache:
/// - the nodes live in one array, each a copy of its timer's key beside the timer (16 bytes,
///   four to a cache line), so a comparison reads the array and the timer only to break a
///   tie;
/// - the heap is 4-ary: half the levels of a binary heap, so half the position writes into
///   timers (each a likely cache miss) for a few more comparisons of neighbouring keys.
///
/// A node owns one retain of its timer, taken by ``insert(_:)`` and given back by
/// ``remove(_:)`` or ``releaseAll()``. The array never shrinks.
struct TimerHeap {
  struct Node {
    var key: Int64
    let timer: Unmanaged<LoopTimer>

    var sequence: UInt64 { timer._withUnsafeGuaranteedRef { $0.sequence } }

    /// Whether `self` comes out before `other`.
    func precedes(_ other: Node) -> Bool {
      key != other.key ? key < other.key : sequence < other.sequence
    }
  }

  static let arity = 4
  private(set) var nodes: [Node] = []

  var count: Int { nodes.count }
  var top: Node? { nodes.first }

  mutating func insert(_ timer: LoopTimer) {
    nodes.append(Node(key: timer.packed.key, timer: .passRetained(timer)))
    siftUp(nodes[nodes.count - 1], from: nodes.count - 1)
  }

  /// Takes `timer` out (it must be in this heap). Callers hold the timer: the release here
  /// is never its last.
  mutating func remove(_ timer: LoopTimer) {
    let index = Int(timer.heapIndex)
    let last = nodes.removeLast()
    if index < nodes.count { place(last, at: index) }
    timer.heapIndex = -1
    Unmanaged.passUnretained(timer).release()
  }

  /// Moves `timer` to its place after its key changed.
  mutating func update(_ timer: LoopTimer) {
    let index = Int(timer.heapIndex)
    nodes[index].key = timer.packed.key
    place(nodes[index], at: index)
  }

  /// Empties the heap, giving back every node's retain. May free timers and what their
  /// handlers captured: call it holding no lock.
  mutating func releaseAll() {
    let taken = nodes
    nodes = []
    for node in taken { node.timer.release() }
  }

  /// Visits nodes from the top down: `enter` is called for a node only if it returned
  /// `true` for the node's parent. A query that knows nothing below a node can matter
  /// (every key there is at least the node's) returns `false` to skip the subtree.
  func descend(from index: Int = 0, _ enter: (Node) -> Bool) {
    guard index < nodes.count, enter(nodes[index]) else { return }
    let first = Self.arity * index + 1
    for child in min(first, nodes.count)..<min(first + Self.arity, nodes.count) {
      descend(from: child, enter)
    }
  }

  /// Whether every parent precedes its children and every timer records its position and
  /// key right (for tests).
  func isConsistent() -> Bool {
    nodes.indices.allSatisfy { index in
      let timer = nodes[index].timer.takeUnretainedValue()
      return Int(timer.heapIndex) == index && timer.packed.key == nodes[index].key
        && (index == 0 || !nodes[index].precedes(nodes[(index - 1) / Self.arity]))
    }
  }

  // MARK: Sifting

  /// Puts `node` in the hole at `index`, moving it up or down to its place.
  private mutating func place(_ node: Node, at index: Int) {
    if index > 0, node.precedes(nodes[(index - 1) / Self.arity]) {
      siftUp(node, from: index)
    } else {
      siftDown(node, from: index)
    }
  }

  /// Moves the hole at `index` up until `node` fits in it, then puts `node` there. Sifts
  /// move a hole rather than swapping, so each node that moves is written once.
  private mutating func siftUp(_ node: Node, from index: Int) {
    nodes.withUnsafeMutableBufferPointer { buffer in
      var index = index
      while index > 0 {
        let parent = (index - 1) / Self.arity
        guard node.precedes(buffer[parent]) else { break }
        Self.put(buffer[parent], at: index, in: buffer)
        index = parent
      }
      Self.put(node, at: index, in: buffer)
    }
  }

  /// Moves the hole at `index` down until `node` fits in it, then puts `node` there.
  private mutating func siftDown(_ node: Node, from index: Int) {
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
        Self.put(buffer[child], at: index, in: buffer)
        index = child
      }
      Self.put(node, at: index, in: buffer)
    }
  }

  private static func put(_ node: Node, at index: Int, in buffer: UnsafeMutableBufferPointer<Node>)
  {
    buffer[index] = node
    node.timer._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: index) }
  }
}
