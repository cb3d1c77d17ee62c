/// Step 4's reading of the loop's ``SignalInbox``: the signalled sources, not every source
/// of the mode, so a pass costs what was signalled and a change to the loop's sources costs
/// the pass nothing (no list of the mode's sources to work out again).
extension EventRunLoop {
  /// Whether step 4 has a signalled source to look at in `active`: a source signalled since
  /// it last looked, or one it left signalled for another mode (or another state of the
  /// loop's sources) than this one. Most passes answer with two atomic loads.
  func mayHaveSignalledSources(_ active: ActiveMode) -> Bool {
    if signalInbox.hasFreshSignals { return true }
    guard signalInbox.mayHoldSources else { return false }
    guard let checked = local.signalsCheckedFor else { return true }
    return checked.mode != active.mode
      || checked.structure != published.structure.load(ordering: .sequentiallyConsistent)
  }

  /// Performs the sources of `active` that are signalled now, in ascending order, equal orders
  /// in the order they were first signalled (CFRunLoop's rule); with `onlyFirst`, only the
  /// first. A source signalled by one of these call-outs waits for the next pass, as in
  /// CFRunLoop, which collects the signalled sources before calling any. Returns whether
  /// any ran.
  func performSignalledSources(_ active: ActiveMode, onlyFirst: Bool) -> Bool {
    // Lists taken from a pool (a call-out may run the loop nested, which takes another):
    // once they have grown, a pass allocates nothing here.
    var batch = local.signalledSourceLists.popLast() ?? []
    let structure = state.withLock { state -> UInt64 in
      signalInbox.sweep { source, stamp in
        // Performed (here or by another loop) or invalidated: out until signalled again.
        guard stamp != 0, source.isValid else { return false }
        // In place: a copy of the table per entry would retain its storage each time.
        if state.sources.contains(source, in: active.mode)
          || (active.isCommon && state.sources.contains(source, in: .common))
        {
          batch.append((source.order, stamp, source))
        }
        // Signalled sources of the loop's other modes wait for a run in one of them.
        return true
      }
      return state.published.structure.load(ordering: .sequentiallyConsistent)
    }
    if batch.count > 1 { batch.sort { ($0.order, $0.stamp) < ($1.order, $1.stamp) } }
    var handled = false
    for (_, stamp, source) in batch where source.isValid && source.consumeSignal() {
      handled = true
      // Taken only while something traces call-outs, as the call-out reads it only then.
      let origin =
        calloutInstrumentCount.load(ordering: .relaxed) > 0
        ? source.takeCause(ofSignal: stamp) : nil
      callOut(
        .source, name: source.name, dueAt: source.signalTime, cause: origin?.cause,
        contexts: origin?.contexts
      ) { source.performHandler() }
      if onlyFirst { break }
    }
    // Until something changes, the sources left in the inbox cannot run in this mode,
    // unless one of the batch is still signalled (left by `onlyFirst`, or signalled again).
    let leftSignalled = batch.contains { $0.source.hasPendingSignal }
    local.signalsCheckedFor = leftSignalled ? nil : (structure, active.mode)
    batch.removeAll(keepingCapacity: true)
    local.signalledSourceLists.append(batch)
    return handled
  }
}
