import RunLoopCore

/// Runs an action once calls stop coming for a while: every ``call()`` restarts the delay
/// (the guide's search field, which starts searching once the user pauses typing).
///
/// ```swift
/// let search = Debouncer(delay: .milliseconds(300)) { runSearch() }
/// // on every keystroke:
/// search.call()
/// ```
///
/// The action runs on `loop`'s thread while it runs in one of `modes`. All methods are safe
/// from any thread.
public final class Debouncer: Sendable {
  /// How long calls must stop before the action runs.
  ///
  /// ```swift
  /// print(search.delay)  // 0.3 seconds
  /// ```
  public let delay: Duration
  /// The loop the action runs on.
  ///
  /// ```swift
  /// assert(search.loop === EventRunLoop.main)
  /// ```
  public let loop: EventRunLoop
  /// The modes in which the action may run.
  ///
  /// ```swift
  /// let save = Debouncer(delay: .seconds(1), modes: [.common]) { save() }
  /// print(save.modes)  // [common]
  /// ```
  public let modes: [LoopMode]
  /// The name of the debouncer's timer in traces.
  ///
  /// ```swift
  /// let search = Debouncer(delay: .milliseconds(300), name: "search") { runSearch() }
  /// ```
  public let name: String
  private let action: @Sendable () -> Void
  // Guarded by its own lock: the timer of the pending run, if any.
  private let pending = GuardedState<LoopTimer?>(nil)

  /// Creates a debouncer; nothing is scheduled until the first ``call()``.
  ///
  /// - Parameters:
  ///   - delay: the quiet time before the action runs; zero or negative runs it at the
  ///     loop's next pass after the last call.
  ///   - loop: where the action runs (the calling thread's loop by default).
  ///   - modes: the modes in which the action may run, the common modes by default (as for a
  ///     perform); an empty list means the same.
  ///   - name: the timer's name in traces.
  ///   - action: the work.
  ///
  /// ```swift
  /// let save = Debouncer(delay: .seconds(1), modes: [.default], name: "autosave") { save() }
  /// ```
  public init(
    delay: Duration, loop: EventRunLoop = .current, modes: [LoopMode] = [.common],
    name: String = "debounce", _ action: @escaping @Sendable () -> Void
  ) {
    self.delay = delay
    self.loop = loop
    self.modes = modes.isEmpty ? [.common] : modes
    self.name = name
    self.action = action
  }

  /// Schedules the action `delay` from now, replacing any earlier schedule.
  ///
  /// ```swift
  /// textField.onChange { search.call() }
  /// ```
  public func call() {
    let due = ContinuousClock.now + delay
    pending.withLock { pending in
      // Move the pending run; if it already started (or was cancelled), schedule anew.
      if let timer = pending, timer.reschedule(fireDate: due, tolerance: nil) { return }
      let action = action
      // The run has started once the action does: a call from inside it schedules anew
      // instead of moving this timer, which ends when its call-out returns.
      let timer = try! LoopTimer(fireAt: due, name: name) { timer in
        timer.invalidate()
        action()
      }
      do {
        try loop.add(timer, modes: modes)
        pending = timer
      } catch {
        // Only a loop whose thread has exited refuses a fresh timer: nothing can run.
        pending = nil
      }
    }
  }

  /// Cancels the pending run, if any.
  ///
  /// ```swift
  /// search.cancel()  // the field was cleared
  /// ```
  public func cancel() {
    let timer = pending.withLock { pending -> LoopTimer? in
      defer { pending = nil }
      return pending
    }
    timer?.invalidate()
  }

  /// Whether a run of the action is scheduled and has not started.
  ///
  /// ```swift
  /// if search.isPending { spinner.show() }
  /// ```
  public var isPending: Bool { pending.withLock { $0?.isValid ?? false } }
}
