import RunLoopCore

/// Descriptor readiness as an `AsyncSequence`.
extension DescriptorSource {
  /// The readiness of `fileDescriptor` (readable, or an error or hang-up), watched by `loop`
  /// while it runs in `mode`, as a sequence.
  ///
  /// Readiness is a state, not a stream of events, so nothing is ever dropped: when the
  /// descriptor becomes ready the sequence gets one element and the watch pauses (the source
  /// leaves the loop, and a level-triggered descriptor stops waking it); when the consumer
  /// asks for the next element, having read what it wanted, the watch resumes and reports
  /// again if the descriptor is still ready. Ending the consuming task invalidates the source
  /// (which closes the descriptor only with `ownership: .owned`).
  ///
  /// ```swift
  /// for await events in try DescriptorSource.readiness(of: pipeReadEnd, on: worker) {
  ///   if events.contains(.readable) { drain(pipeReadEnd) }
  /// }
  /// ```
  ///
  /// - Throws: what ``add(to:mode:)`` throws.
  public static func readiness(
    of fileDescriptor: Int32, on loop: EventRunLoop, mode: LoopMode = .common,
    ownership: DescriptorOwnership = .borrowed, name: String = "descriptor"
  ) throws(RunLoopError) -> LoopEvents<DescriptorEvents> {
    try LoopEvents<DescriptorEvents>.fed(
      on: loop, buffering: .newest(1),
      by: { feed in
        // Pauses the watch until the consumer comes back for more.
        @Sendable func report(_ events: DescriptorEvents, _ source: DescriptorSource) {
          source.remove(from: loop, mode: mode)
          feed.yield(events)
        }
        return DescriptorSource(
          fileDescriptor: fileDescriptor, ownership: ownership, name: name,
          onReadable: { report(.readable, $0) }, onError: { report($1, $0) })
      },
      start: { source throws(RunLoopError) in try source.add(to: loop, mode: mode) },
      stop: { source in source.invalidate() },
      onDemand: { source in
        guard source.isValid, !source.isScheduled(on: loop, mode: mode) else { return }
        try? source.add(to: loop, mode: mode)
      }
    ).events
  }
}
