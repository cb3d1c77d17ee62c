import Synchronization

/// A custom (version 0) input source: work that other threads hand to a run loop by
/// signalling, the guide's "custom input source" (CoreFoundation's `CFRunLoopSource`
/// created with a version-0 context).
///
/// The source has three call-outs, as in the guide's Listings 3-4 to 3-6:
/// - `schedule` runs when the source is added to a loop in a mode (on the thread that adds it);
/// - `perform` runs on the loop's thread when the loop, running in one of the source's modes,
///   finds the source signalled (step 4 of the sequence of events);
/// - `cancel` runs when the source is removed from a loop's mode or invalidated.
///
/// Signalling does not wake a sleeping loop (as in CoreFoundation): signal, then call
/// ``EventRunLoop/wakeUp()``, or use ``signalAndWakeUp()``. A signal is never lost: a source
/// signalled while its loop runs another mode is performed when the loop next runs one of
/// its modes.
///
/// ```swift
/// let source = CustomInputSource(name: "commands") { drainCommandBuffer() }
/// try worker.add(source, mode: .default)
/// // on any thread:
/// source.signalAndWakeUp()
/// ```
///
/// All methods are safe to call from any thread.
public final class CustomInputSource: ModeScheduledItem, Sendable {
  /// The source's name in traces.
  ///
  /// ```swift
  /// let source = CustomInputSource(name: "commands") { drainCommands() }
  /// source.name  // "commands"
  /// ```
  public let name: String
  /// Sources that are signalled at once run in ascending order; sources of equal order run
  /// in the order they were first signalled since they last ran (CFRunLoop's rule).
  ///
  /// ```swift
  /// let urgent = CustomInputSource(name: "urgent", order: -1) { handleUrgent() }
  /// ```
  public let order: Int

  let scheduleHandler: (@Sendable (EventRunLoop, LoopMode) -> Void)?
  let cancelHandler: (@Sendable (EventRunLoop, LoopMode) -> Void)?
  let performHandler: @Sendable () -> Void

  // 0 while not signalled; else the stamp of the first signal since the source last ran,
  // which orders sources of equal order.
  private let signalStamp = Atomic<UInt64>(0)
  private let valid = Atomic<Bool>(true)
  // The `LoopClock` reading at the latest signal, recorded only while some instrument wants
  // call-outs; 0 when unknown.
  private let signalledAtNanoseconds = Atomic<Int64>(0)
  // Guarded by its own lock: the (loop, mode) pairs the source is in, and who made the
  // pending signal.
  private let shared = GuardedState(Shared())

  private struct Shared {
    var registrations: [Registration] = []
    // The cause of the first signal since the source last ran, with that signal's stamp (so
    // a perform never reports the cause of a later signal); recorded only while some
    // instrument wants call-outs.
    var cause: (stamp: UInt64, cause: CalloutCause, contexts: CapturedContexts?)?
  }

  private struct Registration {
    weak var loop: EventRunLoop?
    let loopID: UInt64
    let mode: LoopMode
    /// The loop's inbox of signalled sources (held strongly: it does not keep the loop).
    let inbox: SignalInbox
  }

  /// Creates a source.
  ///
  /// - Parameters:
  ///   - name: how traces name the source.
  ///   - order: sources signalled together run in ascending order.
  ///   - schedule: called when the source is added to a loop in a mode.
  ///   - cancel: called when the source leaves a loop's mode (removed or invalidated).
  ///   - perform: called on the loop's thread when the signalled source runs.
  ///
  /// ```swift
  /// let source = CustomInputSource(
  ///   name: "jobs", order: 1,
  ///   schedule: { loop, mode in print("scheduled in \(mode)") },
  ///   cancel: { loop, mode in print("left \(mode)") }
  /// ) { runPendingJobs() }
  /// ```
  public init(
    name: String = "source", order: Int = 0,
    schedule: (@Sendable (EventRunLoop, LoopMode) -> Void)? = nil,
    cancel: (@Sendable (EventRunLoop, LoopMode) -> Void)? = nil,
    perform: @escaping @Sendable () -> Void
  ) {
    self.name = name
    self.order = order
    self.scheduleHandler = schedule
    self.cancelHandler = cancel
    self.performHandler = perform
  }

  /// Marks the source as ready to run. The loop performs it in its next pass in one of the
  /// source's modes; several signals before that pass make one perform, in the place of the
  /// first among sources of equal order.
  ///
  /// Signalling an invalidated source does nothing.
  ///
  /// ```swift
  /// source.signal()
  /// loop.wakeUp()
  /// ```
  public func signal() {
    signal(waking: false)
  }

  /// Signals, and with `waking` wakes every loop the source is in, under one hold of the
  /// source's own lock (waking takes no lock: see `EventRunLoop.wakeUp()`).
  private func signal(waking: Bool) {
    guard isValid else { return }
    let traced = calloutInstrumentCount.load(ordering: .relaxed) > 0
    if traced {
      signalledAtNanoseconds.store(LoopClock.now(), ordering: .relaxed)
    } else if signalledAtNanoseconds.load(ordering: .relaxed) != 0 {
      // Unrecorded: an instrument attached before the call-out must not see the time of an
      // earlier, recorded signal as this one's. (Loaded first: a store per signal would
      // move the cache line between signalling threads even when nothing is traced.)
      signalledAtNanoseconds.store(0, ordering: .relaxed)
    }
    // A source already signalled keeps its first stamp (and its place), as in CFRunLoop,
    // which keeps the time of the first signal.
    var first = false
    var stamp: UInt64 = 0
    if signalStamp.load(ordering: .relaxed) == 0 {
      stamp = signalStamps.wrappingAdd(1, ordering: .relaxed).newValue
      first =
        signalStamp.compareExchange(expected: 0, desired: stamp, ordering: .releasing)
        .exchanged
    }
    guard first || waking else { return }
    // The first signal since the source last ran is the one CF orders by: its maker is the
    // cause of the perform. (Recorded after the stamp: a pass that takes the signal in
    // between finds no cause for that stamp, rather than another signal's.)
    let cause = first && traced ? CalloutCause.capture() : nil
    let contexts = cause == nil ? nil : CapturedContexts.captureIfWanted()
    shared.withLock { shared in
      if let cause { shared.cause = (stamp, cause, contexts) }
      var lastLoop: UInt64?
      for registration in shared.registrations where registration.loopID != lastLoop {
        // The first signal since the source last ran: the loops it is in learn of it, so
        // that their passes look at the signalled sources only.
        if first { registration.inbox.add(self) }
        if waking { registration.loop?.wakeUp() }
        lastLoop = registration.loopID
      }
    }
  }

  /// Signals the source and wakes every loop it is scheduled on, the two calls the guide's
  /// Listing 3-9 makes.
  ///
  /// ```swift
  /// source.signalAndWakeUp()
  /// ```
  public func signalAndWakeUp() {
    signal(waking: true)
  }

  /// Whether the source is signalled and not yet performed.
  ///
  /// ```swift
  /// source.signal()
  /// source.isSignalled  // true until the loop performs it
  /// ```
  public var isSignalled: Bool { signalStamp.load(ordering: .acquiring) != 0 }

  /// Whether the source can still be added and signalled.
  ///
  /// ```swift
  /// if source.isValid { try loop.add(source, mode: .default) }
  /// ```
  public var isValid: Bool { valid.load(ordering: .acquiring) }

  /// Removes the source from every loop and mode it is in (calling `cancel` for each) and
  /// makes it unusable. Invalidating twice does nothing the second time.
  ///
  /// ```swift
  /// source.invalidate()
  /// source.isValid  // false
  /// ```
  public func invalidate() {
    guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
    signalStamp.store(0, ordering: .releasing)
    let current = shared.withLock { $0.registrations }
    for registration in current {
      registration.loop?.remove(self, mode: registration.mode)
    }
  }

  /// Whether a signal waits, read as `consumeSignal()` reads it (see there), without
  /// consuming it.
  var hasPendingSignal: Bool { signalStamp.load(ordering: .sequentiallyConsistent) != 0 }

  /// The stamp of the pending signal (0: none), read as `hasPendingSignal` reads it.
  var pendingSignalStamp: UInt64 { signalStamp.load(ordering: .sequentiallyConsistent) }

  /// Takes the signal: returns whether the source was signalled and clears it.
  func consumeSignal() -> Bool {
    // Sequentially consistent (a plain load on x86): it comes after the loop's sequentially
    // consistent clearing of its wake flag, and against the fence in `wakeUp()` that is what
    // makes "the pass sees the signal, or the signaller sees the flag clear and writes" hold
    // under the language's memory model, not only on x86.
    guard signalStamp.load(ordering: .sequentiallyConsistent) != 0 else { return false }
    return signalStamp.exchange(0, ordering: .acquiringAndReleasing) != 0
  }

  /// Who made the signal with `stamp`, if it was recorded; forgets it.
  func takeCause(ofSignal stamp: UInt64) -> (cause: CalloutCause, contexts: CapturedContexts?)? {
    shared.withLock { shared in
      guard let recorded = shared.cause, recorded.stamp == stamp else { return nil }
      shared.cause = nil
      return (recorded.cause, recorded.contexts)
    }
  }

  /// When the latest signal happened (a `LoopClock` reading), if it was recorded.
  var signalTime: Int64? {
    let nanoseconds = signalledAtNanoseconds.load(ordering: .relaxed)
    return nanoseconds == 0 ? nil : nanoseconds
  }

  func didSchedule(on loop: EventRunLoop, mode: LoopMode) {
    shared.withLock {
      $0.registrations.append(
        Registration(loop: loop, loopID: loop.id, mode: mode, inbox: loop.signalInbox))
    }
  }

  func didUnschedule(from loop: EventRunLoop, mode: LoopMode) {
    shared.withLock { shared in
      if let index = shared.registrations.firstIndex(where: {
        $0.loopID == loop.id && $0.mode == mode
      }) {
        shared.registrations.remove(at: index)
      }
    }
  }

}

// Stamps of first signals, process-wide: they order signalled sources of equal order by
// when they were signalled. A counter rather than a clock (CFRunLoop reads a clock): two
// signals never tie, and it costs one atomic add per first signal.
private let signalStamps = Atomic<UInt64>(0)
