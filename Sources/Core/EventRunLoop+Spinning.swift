import Glibc

/// Polling before sleep: a loop that is woken again and again within microseconds polls for
/// a moment before it blocks, so that it sees the next piece of work without waiting for
/// the kernel (and, on a virtual machine, the hypervisor) to wake its thread.
extension EventRunLoop {
  /// The longest a sleep may poll before it blocks; `.zero` turns polling off for this
  /// loop. Safe to set from any thread; the loop's next sleep uses it. Values are clamped to
  /// the range 0 to 1 ms. New loops start with ``defaultSpinLimit`` (50 µs unless changed).
  ///
  /// The loop polls only when all of these hold:
  /// - its recent sleeps were short: a sleep that ended within the limit opens the polling
  ///   window (an eighth of the limit, doubling with each short sleep up to the limit), and a
  ///   sleep longer than the limit shuts it again. A loop woken every millisecond, or idle,
  ///   never polls;
  /// - its polls pay: when fewer than half of the last 32 caught work, polling pauses (for
  ///   64 sleeps, doubling while polls keep missing);
  /// - its thread may run on more than one CPU (read again every 1,024 sleeps);
  /// - fewer loops of the process are polling than the thread has CPUs (two loops handing
  ///   work back and forth on two CPUs may both poll; a third waits its turn by blocking).
  ///
  /// Polling is non-blocking `epoll_wait` calls, so it sees everything a sleep would (a
  /// wake-up, a descriptor, a timer), and ends early for any of them. Its cost is CPU time:
  /// up to the limit per sleep while the loop is being woken at short intervals.
  ///
  /// ```swift
  /// let worker = RunLoopThread(name: "worker") { thread in
  ///   thread.runLoop.spinLimit = .zero  // never poll: sleep at once, every time
  ///   try thread.runLoop.run()
  /// }
  /// ```
  public var spinLimit: Duration {
    get { .nanoseconds(spinLimitStorage.load(ordering: .relaxed)) }
    set { spinLimitStorage.store(spinLimitNanoseconds(newValue), ordering: .relaxed) }
  }

  /// The ``spinLimit`` that loops created from now on start with: 50 µs unless changed.
  /// Clamped to the range 0 to 1 ms; `.zero` makes new loops never poll.
  ///
  /// ```swift
  /// // A battery-powered device: no loop of this process polls before it sleeps.
  /// EventRunLoop.defaultSpinLimit = .zero
  /// ```
  public static var defaultSpinLimit: Duration {
    get { .nanoseconds(defaultSpinLimitNanoseconds.load(ordering: .relaxed)) }
    set { defaultSpinLimitNanoseconds.store(spinLimitNanoseconds(newValue), ordering: .relaxed) }
  }

  /// How often this loop has polled before sleeping, how often that caught work, and the
  /// time it took. Safe from any thread.
  ///
  /// ```swift
  /// let spins = loop.spinStatistics
  /// print("\(spins.caught) of \(spins.spins) polls caught work")
  /// ```
  public var spinStatistics: LoopSpinStatistics {
    LoopSpinStatistics(
      spins: spinCounters.spins.load(ordering: .relaxed),
      caught: spinCounters.caught.load(ordering: .relaxed),
      spinTime: .nanoseconds(Int64(clamping: spinCounters.nanoseconds.load(ordering: .relaxed))))
  }

  /// Step 7's blocking wait: polls first when the window is open and a polling place is
  /// free, then blocks; adjusts the window by how long the sleep took. Returns the number
  /// of events in `buffer`.
  func blockingWait(into buffer: UnsafeMutableRawPointer) -> Int {
    let limit = spinLimitStorage.load(ordering: .relaxed)
    guard limit > 0, local.spin.threadHasAnotherCPU() else {
      return poller.wait(into: buffer, block: true)
    }
    let start = ClockReference.nowNanoseconds()
    let window = min(local.spin.nanoseconds, limit)
    if window > 0, takeSpinSlot(of: local.spin.allowedCPUs) {
      let caught = poll(into: buffer, from: start, until: start + window)
      releaseSpinSlot()
      local.spin.pollEnded(caught: caught != nil)
      if let caught { return caught }
    }
    let count = poller.wait(into: buffer, block: true)
    local.spin.adapt(slept: ClockReference.nowNanoseconds() - start, limit: limit)
    return count
  }

  /// Non-blocking waits until an event or a wake-up arrives or `end` passes. Returns the
  /// number of events (0 when a wake-up came as a mark, with no event), or `nil` when
  /// nothing came; records the spin.
  ///
  /// While it polls, the wake state says `polling` (when it was `awake`: with `written`, the
  /// eventfd's event is on its way and the poll sees it), so a `wakeUp()` marks the state
  /// instead of writing to the eventfd. Leaving, the poll sets `awake` again unless a mark
  /// came; after that, wake-ups write, and the blocking wait that follows sees them.
  private func poll(into buffer: UnsafeMutableRawPointer, from start: Int64, until end: Int64)
    -> Int?
  {
    let marking = wakeState.compareExchange(
      expected: WakeState.awake, desired: WakeState.polling, ordering: .sequentiallyConsistent
    ).exchanged
    var count = 0
    var now = start
    var marked = false
    // No sched_yield() between polls: on a CPU shared with busy threads, a yielding thread
    // goes behind them for a whole time slice (milliseconds), where a poll that keeps the
    // CPU costs them at most its window. Measured: with two compilers running, yielding cut
    // the signal-pummel call-outs from about 100,000/s to 256/s.
    repeat {
      if marking, wakeState.load(ordering: .sequentiallyConsistent) == WakeState.marked {
        marked = true
        break
      }
      count = poller.wait(into: buffer, block: false)
      now = ClockReference.nowNanoseconds()
    } while count == 0 && now < end
    if marking,
      !wakeState.compareExchange(
        expected: WakeState.polling, desired: WakeState.awake, ordering: .sequentiallyConsistent
      ).exchanged
    {
      // Marked after the last look: a wake-up all the same.
      marked = true
      wakeState.store(WakeState.awake, ordering: .sequentiallyConsistent)
    }
    let caught = count > 0 || marked
    // From the last reading of the loop (one poll short when a mark ended it).
    spinCounters.record(nanoseconds: now - start, caught: caught)
    return caught ? count : nil
  }
}
