import RunLoopCore

/// Adding observers to a loop (CoreFoundation's `CFRunLoopAddObserver` and friends).
extension EventRunLoop {
  /// Adds `observer` to this loop in `mode`, which may be ``/RunLoopCore/LoopMode/common``
  /// (then the observer is in every common mode, including modes made common later).
  /// Adding an observer twice to the same mode, or adding an invalidated observer, does
  /// nothing, and so does adding to a loop whose thread has exited. Safe from any thread,
  /// including from an observer's call-out (the new observer hears from the next
  /// notification on). When the loop's thread exits, the loop forgets its observers.
  ///
  /// Observers do not keep a run going: a mode with only observers is empty, as in
  /// CoreFoundation.
  ///
  /// ```swift
  /// let observer = LoopObserver(activities: .beforeWaiting) { _, _ in flushLogs() }
  /// EventRunLoop.current.add(observer, mode: .common)
  /// ```
  public func add(_ observer: LoopObserver, mode: LoopMode) {
    guard observer.isValid, !threadHasExited else { return }
    let registry = observerRegistry()
    if registry.add(observer, mode: mode) {
      observer.didAdd(to: registry, mode: mode)
      // An invalidate() that raced with this add may have missed the new registration.
      if !observer.isValid { registry.remove(observer, mode: mode) }
    }
  }

  /// Removes `observer` from `mode` of this loop; removing one that is not there does
  /// nothing. Safe from any thread.
  ///
  /// ```swift
  /// loop.remove(observer, mode: .default)
  /// ```
  public func remove(_ observer: LoopObserver, mode: LoopMode) {
    guard let registry = _observerRegistries.withLock({ $0[id] }) else { return }
    registry.remove(observer, mode: mode)
  }

  /// Whether `observer` was added to exactly `mode` of this loop (not through
  /// ``/RunLoopCore/LoopMode/common``).
  ///
  /// ```swift
  /// loop.contains(observer, mode: .common)  // true after add(observer, mode: .common)
  /// ```
  public func contains(_ observer: LoopObserver, mode: LoopMode) -> Bool {
    guard let registry = _observerRegistries.withLock({ $0[id] }) else { return false }
    return registry.contains(observer, mode: mode)
  }

  /// This loop's observer registry, created and attached as an instrument on first use.
  private func observerRegistry() -> ObserverRegistry {
    _observerRegistries.withLock { registries in
      if let existing = registries[id] { return existing }
      let registry = ObserverRegistry(loopID: id)
      registries[id] = registry
      // Attached under the lock so that a second thread adding an observer to the same loop
      // cannot return before the registry hears activities. addInstrument only takes the
      // loop's own lock; it calls no user code.
      addInstrument(registry)
      return registry
    }
  }
}
