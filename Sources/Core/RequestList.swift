/// A first-in, first-out list of perform requests, linked through the requests themselves
/// (`PerformRequest.next`): a loop's queue and a pass's batch.
///
/// An intrusive list rather than a `Deque`: linking the requests makes appending, taking
/// the first and moving a whole list onto another constant time, with no storage of its own
/// (no allocation per queue growth) and no reference counting beyond the one reference a
/// list holds on each request. The tail is `Unmanaged` (not retained: the request is held by
/// its predecessor's link), which is the list's one unsafe construct.
///
/// A request is in at most one list at a time. Whoever owns the list owns its requests'
/// links: the loop's lock for the queue, the loop's thread for a batch.
struct RequestList {
  private var head: PerformRequest?
  // Not retained: the last request is held by its predecessor's link (or by `head`).
  private var tail: Unmanaged<PerformRequest>?
  private(set) var count = 0

  var isEmpty: Bool { head == nil }

  /// Adds `request`, which must be in no list, at the end.
  mutating func append(_ request: consuming PerformRequest) {
    let last = Unmanaged.passUnretained(request)
    // Moved in through `take()`: assigning `request` itself costs a retain and a release.
    var moving: PerformRequest? = consume request
    if let tail {
      tail._withUnsafeGuaranteedRef { $0.next = moving.take() }
    } else {
      head = moving.take()
    }
    tail = last
    count += 1
  }

  /// Takes the first request out of the list.
  mutating func popFirst() -> PerformRequest? {
    guard let first = head.take() else { return nil }
    head = first.next.take()
    if head == nil { tail = nil }
    count -= 1
    return first
  }

  /// Moves every request of `other` to the end of this list, leaving `other` empty.
  mutating func append(contentsOf other: inout RequestList) {
    guard other.head != nil else { return }
    if let tail {
      tail._withUnsafeGuaranteedRef { $0.next = other.head.take() }
    } else {
      head = other.head.take()
    }
    tail = other.tail.take()
    count += other.count
    other.count = 0
  }

  /// Empties the list, one request at a time (dropping the head alone would release the
  /// chain recursively).
  mutating func removeAll() {
    while popFirst() != nil {}
  }

  /// Whether every request satisfies `predicate`; walks the links without retaining.
  func allSatisfy(_ predicate: (PerformRequest) -> Bool) -> Bool {
    !contains { !predicate($0) }
  }

  /// Whether some request satisfies `predicate`; walks the links without retaining.
  func contains(where predicate: (PerformRequest) -> Bool) -> Bool {
    var link = head.map(Unmanaged.passUnretained)
    while let node = link {
      let (found, next) = node._withUnsafeGuaranteedRef { request in
        (predicate(request), request.next.map(Unmanaged.passUnretained))
      }
      if found { return true }
      link = next
    }
    return false
  }
}

extension RequestList {
  /// Takes `request` out of the list; returns whether it was there. Walks the list: for the
  /// rare producer that gives up waiting in a perform queue's line.
  mutating func remove(_ request: PerformRequest) -> Bool {
    var kept = RequestList()
    var found = false
    while let next = popFirst() {
      if next === request { found = true } else { kept.append(next) }
    }
    self = kept
    return found
  }
}
