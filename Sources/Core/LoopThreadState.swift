/// What only the loop's own thread touches (`EventRunLoop.local`).
struct LoopThreadState {
  /// The pass counter of ``LoopPassInfo/iteration``.
  var iteration: UInt64 = 0
  /// Counts runs started on this loop, so a pass can tell that a call-out ran a nested run.
  var runsStarted: UInt64 = 0
  /// The modes of the active runs, innermost last.
  var modes: [LoopMode] = []
  var instruments = InstrumentCache()
  /// Reached only through `EventRunLoop[passIn:]`, which keeps it current.
  var passSnapshot = PassSnapshotSlot()
  /// How long the next sleep may poll before it blocks.
  var polling = PollingWindow()
}
