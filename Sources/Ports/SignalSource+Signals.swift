import RunLoopCore

/// Signals as an `AsyncSequence`.
extension SignalSource {
  /// The signals of `signals` this process receives, read on `loop`'s thread while it runs in
  /// `mode`, as a sequence (a ``SignalSource`` made and added for it, which receives them
  /// whatever the threads' masks). With the default
  /// `.oldest(64)` a full buffer refuses further signals and counts them in
  /// `LoopEvents.droppedCount` (the kernel itself merges a standard signal
  /// sent again before it is read). Ending the consuming task invalidates the source.
  ///
  /// ```swift
  /// for await signal in try SignalSource.signals([SIGHUP], on: EventRunLoop.main) {
  ///   reload(because: signal)
  /// }
  /// ```
  ///
  /// - Throws: what ``init(signals:name:blockInCallingThread:handler:)`` and
  ///   ``add(to:mode:)`` throw.
  public static func signals(
    _ signals: [Int32], on loop: EventRunLoop, mode: LoopMode = .common,
    name: String = "signals", buffering: LoopEvents<ReceivedSignal>.Buffering = .oldest(64)
  ) throws(RunLoopError) -> LoopEvents<ReceivedSignal> {
    try LoopEvents<ReceivedSignal>.fed(
      on: loop, buffering: buffering,
      by: { feed throws(RunLoopError) in
        try SignalSource(signals: signals, name: name) { signal in feed.yield(signal) }
      },
      start: { source throws(RunLoopError) in try source.add(to: loop, mode: mode) },
      stop: { source in source.invalidate() }
    ).events
  }
}
