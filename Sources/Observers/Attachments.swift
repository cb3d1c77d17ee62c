import RunLoopCore

/// Where an instrument of this module is attached (loops one by one, or every loop of the
/// process) and whether it was closed, behind one lock: the attach, detach and close of
/// `LoopTracer` (RunLoopTracing), ``LoopMetrics`` and ``StallWatchdog``, each of which adds and removes
/// itself through it.
package final class Attachments: Sendable {
  package init() {}

  private struct State {
    var loops: [EventRunLoop] = []
    var everyLoop = false
    var closed = false
  }

  private let state = GuardedState(State())

  /// Attaches `instrument` to `loop`, unless it is there already or closed.
  package func attach(_ instrument: any RunLoopInstrument, to loop: EventRunLoop) {
    let added = state.withLock { state -> Bool in
      guard !state.closed, !state.loops.contains(loop) else { return false }
      state.loops.append(loop)
      return true
    }
    if added { loop.addInstrument(instrument) }
  }

  /// Attaches `instrument` to every loop, present and future, unless it is already or closed.
  package func attachToAllLoops(_ instrument: any RunLoopInstrument) {
    let added = state.withLock { state -> Bool in
      guard !state.closed, !state.everyLoop else { return false }
      state.everyLoop = true
      return true
    }
    if added { EventRunLoop.addProcessInstrument(instrument) }
  }

  /// Detaches `instrument` from everything it was attached to.
  package func detach(_ instrument: any RunLoopInstrument) {
    let (loops, everyLoop) = state.withLock { state in
      defer {
        state.loops.removeAll()
        state.everyLoop = false
      }
      return (state.loops, state.everyLoop)
    }
    for loop in loops { loop.removeInstrument(instrument) }
    if everyLoop { EventRunLoop.removeProcessInstrument(instrument) }
  }

  /// Marks the instrument closed (it attaches nowhere after this); `true` the first time.
  package func close() -> Bool {
    state.withLock { state -> Bool in
      defer { state.closed = true }
      return !state.closed
    }
  }

  package var isClosed: Bool { state.withLock { $0.closed } }

  /// Forgets the loop of an exited thread.
  package func forget(_ loop: EventRunLoop) {
    state.withLock { state in state.loops.removeAll { $0 === loop } }
  }
}
