/// Adding and removing custom sources and descriptor watches. Every method here is safe
/// from any thread; schedule and cancel call-outs run on the calling thread, after the
/// loop's lock is released.
extension EventRunLoop {
  /// Adds a custom input source to `mode` (or to every common mode with
  /// ``LoopMode/common``) and calls its `schedule` call-out for each mode it joins. Adding a
  /// source to a mode it is already in does nothing.
  ///
  /// ```swift
  /// try loop.add(source, mode: .default)
  /// ```
  ///
  /// - Throws: ``RunLoopError/Code/invalidated`` for an invalidated source.
  public func add(_ source: CustomInputSource, mode: LoopMode) throws(RunLoopError) {
    guard source.isValid else {
      throw .invalidated("custom source '\(source.name)' was invalidated and cannot be added")
    }
    // The source learns of its registration under the loop's lock (loop lock, then the
    // source's own: the source never takes them the other way round), so a concurrent
    // remove, invalidate or signalAndWakeUp always sees a consistent pair.
    let joined: [LoopMode]? = state.withLock { state in
      guard state.sources.insert(source, in: mode) else { return nil }
      source.didSchedule(on: self, mode: mode)
      // Signalled before it was added (or while it was out of this loop): from now on its
      // registration announces its signals, this one is announced here.
      if source.isSignalled { signalInbox.add(source) }
      return Self.concreteModes(mode, of: source, in: state.sources, commonModes: state.commonModes)
    }
    guard let joined else { return }
    for concrete in joined { source.scheduleHandler?(self, concrete) }
    // An invalidate() that raced with this add may have missed the new registration.
    if !source.isValid { remove(source, mode: mode) }
    // A source signalled before it was added must not wait for an unrelated wake-up.
    if source.isSignalled && !isCurrent { wakeUp() }
  }

  /// Removes a custom input source from `mode` and calls its `cancel` call-out for each
  /// mode it leaves. Removing a source that is not there does nothing.
  ///
  /// ```swift
  /// loop.remove(source, mode: .default)
  /// ```
  public func remove(_ source: CustomInputSource, mode: LoopMode) {
    let removal: (left: [LoopMode], running: Bool)? = state.withLock { state in
      guard state.sources.remove(source, from: mode) else { return nil }
      source.didUnschedule(from: self, mode: mode)
      // Out of the loop: its pending signal must not keep it (and its closures) alive here.
      if !state.sources.isScheduled(source) { signalInbox.remove(source) }
      let left = Self.concreteModes(
        mode, of: source, in: state.sources, commonModes: state.commonModes)
      return (left, runs.depth > 0)
    }
    guard let (left, running) = removal else { return }
    // A sleeping run learns that its mode has nothing left to watch only when it wakes (the
    // check follows the sleep): wake it, so that it returns `finished` instead of sleeping on.
    if running && !isCurrent { wakeUp() }
    for concrete in left { source.cancelHandler?(self, concrete) }
  }

  /// Whether `source` takes part in runs in `mode` (directly or through ``LoopMode/common``).
  ///
  /// ```swift
  /// loop.contains(source, mode: .default)
  /// ```
  public func contains(_ source: CustomInputSource, mode: LoopMode) -> Bool {
    state.withLock { state in
      state.sources.contains(source, in: mode)
        || (state.commonModes.contains(mode) && state.sources.contains(source, in: .common))
    }
  }

  /// The concrete modes an item enters or leaves when it is added to or removed from
  /// `mode`: for `.common`, the common modes it is not in directly; for a concrete mode, that
  /// mode unless it is also reached through `.common`.
  private static func concreteModes<Item>(
    _ mode: LoopMode, of item: Item, in table: LoopModeTable<Item>, commonModes: Set<LoopMode>
  ) -> [LoopMode] {
    if mode == .common {
      return commonModes.filter { !table.contains(item, in: $0) }.sorted { $0.name < $1.name }
    }
    if commonModes.contains(mode) && table.contains(item, in: .common) { return [] }
    return [mode]
  }

  /// Adds a descriptor watch to `mode` (or every common mode with ``LoopMode/common``).
  /// The first add registers the descriptor with the loop's `epoll` set. Adding a watch to a
  /// mode it is already in does nothing.
  ///
  /// ```swift
  /// try loop.add(watch, mode: .common)
  /// ```
  ///
  /// - Throws: ``RunLoopError/Code/invalidated`` for an invalidated watch;
  ///   ``RunLoopError/Code/alreadyInUse`` when another watch on this loop has the same
  ///   descriptor; ``RunLoopError/Code/systemCallFailed`` when `epoll` refuses it (a closed
  ///   descriptor, or a regular file, which `epoll` cannot watch).
  public func add(_ watch: DescriptorWatch, mode: LoopMode) throws(RunLoopError) {
    guard watch.isValid else {
      throw .invalidated("descriptor watch '\(watch.name)' was invalidated and cannot be added")
    }
    try state.withLock { state throws(RunLoopError) in
      if state.watchesByToken[watch.token] == nil {
        guard !state.watchedDescriptors.contains(watch.fileDescriptor) else {
          throw .alreadyInUse(
            "descriptor \(watch.fileDescriptor) is already watched on \(self) by another watch")
        }
        try poller.add(watch.fileDescriptor, mask: watch.interest.epollMask, token: watch.token)
        state.watchesByToken[watch.token] = watch
        state.watchedDescriptors.insert(watch.fileDescriptor)
        // Under the loop's lock, so that a racing remove cannot undo it (see `unregister`).
        watch.didRegister(with: self)
      }
      state.watches.insert(watch, in: mode)
    }
    if !watch.isValid { removeEverywhere(watch) }
    // A descriptor that is ready already must not wait for an unrelated wake-up.
    if !isCurrent { wakeUp() }
  }

  /// Removes a descriptor watch from `mode`; when it leaves its last mode, the descriptor
  /// leaves the loop's `epoll` set. Removing a watch that is not there does nothing.
  ///
  /// ```swift
  /// loop.remove(watch, mode: .common)
  /// ```
  public func remove(_ watch: DescriptorWatch, mode: LoopMode) {
    let running = state.withLock { state -> Bool in
      guard state.watches.remove(watch, from: mode) else { return false }
      if state.watches.modes(of: watch).isEmpty { unregister(watch, state: &state) }
      return runs.depth > 0
    }
    // As for a source: a run whose mode this emptied must not sleep on.
    if running && !isCurrent { wakeUp() }
  }

  /// Whether `watch` takes part in runs in `mode`.
  ///
  /// ```swift
  /// try loop.add(watch, mode: .common)
  /// loop.contains(watch, mode: .default)  // true: .default is a common mode
  /// ```
  public func contains(_ watch: DescriptorWatch, mode: LoopMode) -> Bool {
    state.withLock { state in
      state.watches.contains(watch, in: mode)
        || (state.commonModes.contains(mode) && state.watches.contains(watch, in: .common))
    }
  }

  /// Removes `watch` from every mode of this loop.
  func removeEverywhere(_ watch: DescriptorWatch) {
    let running = state.withLock { state -> Bool in
      guard state.watchesByToken[watch.token] != nil else { return false }
      for mode in state.watches.modes(of: watch) { state.watches.remove(watch, from: mode) }
      unregister(watch, state: &state)
      return runs.depth > 0
    }
    if running && !isCurrent { wakeUp() }
  }

  /// Takes `watch` out of this loop; called with the loop's lock held. The watch's own list
  /// of loops is updated under the same lock, so an add and a remove racing on two threads
  /// cannot leave the two disagreeing.
  func unregister(_ watch: DescriptorWatch, state: inout LoopState) {
    state.watchesByToken[watch.token] = nil
    state.watchedDescriptors.remove(watch.fileDescriptor)
    // A held watch is already out of the epoll set.
    if state.heldTokens.remove(watch.token) == nil {
      poller.remove(watch.fileDescriptor)
    }
    watch.didUnregister(from: self)
  }

  /// Applies a watch's new interest to the `epoll` set (unless the watch is held).
  func updateInterest(of watch: DescriptorWatch) throws(RunLoopError) {
    try state.withLock { state throws(RunLoopError) in
      guard state.watchesByToken[watch.token] != nil, !state.heldTokens.contains(watch.token)
      else { return }
      try poller.modify(watch.fileDescriptor, mask: watch.interest.epollMask, token: watch.token)
    }
  }
}
