/// Something with deadlines that a loop wakes for and then fires: the extension point
/// through which the Timers module plugs timers into the loop (and Ports its retry delays).
///
/// In each pass the loop asks every deadline source for the instant it must wake by in the
/// running mode (step 7 arms one `timerfd` for the earliest), and after waking tells each
/// one to fire what is due (step 9). The loop calls deadline sources on its own thread with
/// no lock held, and hands them what they need: the run's ``ActiveMode`` and the time. A source that gains an earlier deadline from another thread
/// calls ``EventRunLoop/wakeUp()`` so that the sleeping loop asks again.
///
/// Instants are readings of ``LoopClock`` (nanoseconds of `CLOCK_BOOTTIME`).
package protocol DeadlineSource: AnyObject, Sendable {
  /// Whether the source has anything scheduled in `mode`. A mode in which no source has
  /// items and that has no input sources is empty, and a run in it returns
  /// ``RunResult/finished``.
  func hasItems(in mode: ActiveMode) -> Bool

  /// The instant by which the loop must wake to serve this source in `mode`, or `nil`.
  func nextDeadline(in mode: ActiveMode) -> Int64?

  /// Fires whatever is due at `now` in `mode`, on `loop`'s thread. Call-outs go through
  /// ``EventRunLoop/withCallout(_:name:dueAt:_:)`` so that instruments see them.
  func fireDue(in mode: ActiveMode, now: Int64, on loop: EventRunLoop)
}

extension EventRunLoop {
  /// Plugs a deadline source into this loop. Safe from any thread; adding the same source
  /// twice does nothing.
  package func addDeadlineSource(_ source: any DeadlineSource) {
    let added = state.withLock { state -> Bool in
      guard !state.deadlineSources.contains(where: { $0 === source }) else { return false }
      state.deadlineSources.append(source)
      return true
    }
    // The loop's own thread is not asleep, and it asks every deadline source before it next
    // sleeps: a wake-up from here would only cost an empty pass.
    if added && !isCurrent { wakeUp() }
  }

  /// Unplugs a deadline source. Safe from any thread.
  package func removeDeadlineSource(_ source: any DeadlineSource) {
    let running = state.withLock { state -> Bool in
      state.deadlineSources.removeAll { $0 === source }
      return runs.depth > 0
    }
    // A sleeping loop holds its deadline sources in its pass snapshot: wake it to let go.
    if running && !isCurrent { wakeUp() }
  }

  /// The deadline sources plugged into this loop.
  package var deadlineSources: [any DeadlineSource] {
    state.withLock { $0.deadlineSources }
  }
}
