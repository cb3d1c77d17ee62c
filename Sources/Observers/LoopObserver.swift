import RunLoopCore
import Synchronization

/// A run-loop observer: a call-out the loop makes when it reaches chosen points of its
/// sequence of events (CoreFoundation's `CFRunLoopObserver`, the guide's "Run Loop
/// Observers").
///
/// An observer watches any set of the six ``/RunLoopCore/LoopActivity`` values, repeats or fires
/// once (a one-shot observer invalidates itself after its first call), and runs in ascending
/// ``order`` with the other observers of the same notification (ties in the order they were added).
/// Add it to a loop in one or more modes, including ``/RunLoopCore/LoopMode/common``, with
/// ``RunLoopCore/EventRunLoop/add(_:mode:)``.
///
/// ```swift
/// let observer = LoopObserver(activities: .allActivities) { observer, activity in
///   print("loop reached \(activity)")
/// }
/// EventRunLoop.current.add(observer, mode: .default)
/// ```
///
/// While its call-out runs on a loop, that loop does not call it again (a nested run started
/// from the call-out skips it), as CoreFoundation does; another loop the observer is in still
/// calls it. A one-shot observer is claimed as its one call-out starts, so no other loop can
/// call it a second time, and invalidated when the call-out returns (inside it, ``isValid``
/// is still `true`, as in CoreFoundation). All methods are safe from any thread.
public final class LoopObserver: ModeScheduledItem, Sendable {
  /// The activities the observer wants.
  public let activities: LoopActivity
  /// Whether the observer stays after its first call.
  public let repeats: Bool
  /// Observers told about the same activity run in ascending order.
  public let order: Int
  /// The observer's name in traces (its call-outs are of kind `observer`).
  public let name: String

  let handler: @Sendable (LoopObserver, LoopActivity) -> Void
  private let valid = Atomic<Bool>(true)
  // A one-shot observer's one call-out has been claimed by some loop.
  private let claimed = Atomic<Bool>(false)
  // Guarded by its own lock: the registries (one per loop) and modes the observer is in.
  private let registrations = GuardedState<[(registry: ObserverRegistry, mode: LoopMode)]>([])

  /// Creates an observer.
  ///
  /// - Parameters:
  ///   - activities: the activities to be told about; `.allActivities` for all six.
  ///   - repeats: `false` for a one-shot observer, invalidated after its first call.
  ///   - order: observers of one notification run in ascending order.
  ///   - name: the name traces give the observer's call-outs.
  ///   - handler: called on the loop's thread with the observer and the activity reached.
  ///
  /// ```swift
  /// let sleepWatcher = LoopObserver(activities: [.beforeWaiting, .afterWaiting], order: 10) {
  ///   _, activity in print(activity)
  /// }
  /// ```
  public init(
    activities: LoopActivity, repeats: Bool = true, order: Int = 0, name: String = "observer",
    handler: @escaping @Sendable (LoopObserver, LoopActivity) -> Void
  ) {
    self.activities = activities
    self.repeats = repeats
    self.order = order
    self.name = name
    self.handler = handler
  }

  /// Whether the observer can still be called.
  ///
  /// ```swift
  /// if !observer.isValid { print("one-shot observer already fired") }
  /// ```
  public var isValid: Bool { valid.load(ordering: .acquiring) }

  /// Removes the observer from every loop and mode it is in and makes it unusable; adding it
  /// again afterwards does nothing. Invalidating twice does nothing the second time. Safe to
  /// call from the observer's own call-out.
  ///
  /// ```swift
  /// observer.invalidate()
  /// observer.isValid  // false
  /// ```
  public func invalidate() {
    guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
    unregister()
  }

  private func unregister() {
    let current = registrations.withLock { list in
      defer { list.removeAll() }
      return list
    }
    for registration in current {
      registration.registry.remove(self, mode: registration.mode)
    }
  }

  /// Claims a call-out: `false` when the observer is invalid. Only one loop, once, ever
  /// claims a one-shot observer; it stays valid until ``calloutDidReturn()``. (That a loop
  /// does not re-enter a running call-out is the business of the loop's registry.)
  func claim() -> Bool {
    guard isValid else { return false }
    if !repeats {
      guard !claimed.exchange(true, ordering: .acquiringAndReleasing) else { return false }
    }
    return true
  }

  /// Ends a claimed call-out: a one-shot observer is invalidated now, after its call-out,
  /// as CoreFoundation does.
  func calloutDidReturn() {
    if !repeats { invalidate() }
  }

  func didAdd(to registry: ObserverRegistry, mode: LoopMode) {
    registrations.withLock { $0.append((registry, mode)) }
  }

  func didRemove(from registry: ObserverRegistry, mode: LoopMode) {
    registrations.withLock { list in
      if let index = list.firstIndex(where: { $0.registry === registry && $0.mode == mode }) {
        list.remove(at: index)
      }
    }
  }
}
