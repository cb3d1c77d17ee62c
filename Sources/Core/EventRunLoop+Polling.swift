import Glibc
import Synchronization

/// Polling before sleep: a loop that is woken again and again within microseconds polls for
/// a moment before it blocks, so that it sees the next piece of work without waiting for
/// the kernel (and, on a virtual machine, the hypervisor) to wake its thread.
///
/// The public names say "spin" (``spinLimit``, ``spinStatistics``), the usual word for this
/// in the API of other event loops; inside, the loop "polls".
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
    get { .nanoseconds(pollingLimit.load(ordering: .relaxed)) }
    set { pollingLimit.store(pollingLimitNanoseconds(newValue), ordering: .relaxed) }
  }

  /// The ``spinLimit`` that loops created from now on start with: 50 µs unless changed.
  /// Clamped to the range 0 to 1 ms; `.zero` makes new loops never poll.
  ///
  /// ```swift
  /// // A battery-powered device: no loop of this process polls before it sleeps.
  /// EventRunLoop.defaultSpinLimit = .zero
  /// ```
  public static var defaultSpinLimit: Duration {
    get { .nanoseconds(defaultPollingLimit.load(ordering: .relaxed)) }
    set { defaultPollingLimit.store(pollingLimitNanoseconds(newValue), ordering: .relaxed) }
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
      spins: pollingCounters.polls.load(ordering: .relaxed),
      caught: pollingCounters.caught.load(ordering: .relaxed),
      spinTime: .nanoseconds(
        Int64(clamping: pollingCounters.nanoseconds.load(ordering: .relaxed))))
  }

  /// Step 7's blocking wait: polls first when the window is open and a polling place is
  /// free, then blocks; adjusts the window by how long the sleep took. Returns the number
  /// of events in `buffer`.
  ///
  /// With `onSleepWord`, the run watches no descriptor and has no deadline: only a wake-up
  /// can end its sleep, so the loop blocks on its sleep word (see ``Waker``) rather
  /// than in `epoll`. The caller has taken any wake-up noted during the pass; one that notes
  /// itself in the moment before the wait begins is taken as it begins (see `block` and
  /// `poll`), with no system call.
  func blockingWait(into buffer: UnsafeMutableRawPointer, onSleepWord: Bool) -> Int {
    assertOnLoopThread()
    let limit = pollingLimit.load(ordering: .relaxed)
    guard limit > 0, local.polling.threadHasAnotherCPU() else {
      return block(into: buffer, onSleepWord: onSleepWord)
    }
    let start = LoopClock.now()
    let window = min(local.polling.nanoseconds, limit)
    if window > 0, takePollingSlot(of: local.polling.allowedCPUs) {
      let caught = poll(into: buffer, from: start, until: start + window)
      releasePollingSlot()
      local.polling.pollEnded(caught: caught != nil)
      if let caught { return caught }
    }
    let count = block(into: buffer, onSleepWord: onSleepWord)
    local.polling.adapt(slept: LoopClock.now() - start, limit: limit)
    return count
  }

  /// Blocks until an event or a wake-up: on the sleep word when `onSleepWord`, else in
  /// `epoll`. Returns the number of events (0 from the word). A wake-up that noted itself
  /// just before ends the wait before it begins, with no events taken: descriptors are
  /// level-triggered and the next pass sees them, and due timers fire from the clock.
  private func block(into buffer: UnsafeMutableRawPointer, onSleepWord: Bool) -> Int {
    if onSleepWord {
      if waker.sleepOnWord() { local.wakeUpsTaken &+= 1 }
      return 0
    }
    guard waker.beginWait(.epoll) else {
      local.wakeUpsTaken &+= 1
      return 0
    }
    let count = poller.wait(into: buffer, block: true)
    if waker.endWait() { local.wakeUpsTaken &+= 1 }
    return count
  }

  /// Non-blocking waits until an event or a wake-up arrives or `end` passes. Returns the
  /// number of events (0 when a wake-up came with none), or `nil` when nothing came; counts
  /// the poll.
  ///
  /// While it polls, the waker's state is `waiting(.poll)` (see ``Waker``), so a `wakeUp()`
  /// sets the state instead of writing to the eventfd. A wake-up that came during the pass
  /// ends the poll before it begins.
  private func poll(into buffer: UnsafeMutableRawPointer, from start: Int64, until end: Int64)
    -> Int?
  {
    guard waker.beginWait(.poll) else {
      // As in `block`: no events taken, the next pass sees them.
      local.wakeUpsTaken &+= 1
      return 0
    }
    var count = 0
    var now = start
    // No sched_yield() between polls: on a CPU shared with busy threads, a yielding thread
    // goes behind them for a whole time slice (milliseconds), where a poll that keeps the
    // CPU costs them at most its window.
    repeat {
      if waker.isWoken { break }
      count = poller.wait(into: buffer, block: false)
      now = LoopClock.now()
    } while count == 0 && now < end
    let woken = waker.endWait()
    if woken { local.wakeUpsTaken &+= 1 }
    let caught = count > 0 || woken
    // From the last reading of the clock (one poll short when a wake-up ended it).
    pollingCounters.record(nanoseconds: now - start, caught: caught)
    return caught ? count : nil
  }
}

/// A loop's polling counts, written by its thread and read from any.
final class PollingCounters: Sendable {
  let polls = Atomic<UInt64>(0)
  let caught = Atomic<UInt64>(0)
  let nanoseconds = Atomic<UInt64>(0)

  /// Counts one poll. Only the loop's thread writes, so plain loads and stores do (a
  /// read-modify-write would lock the bus three times per poll for nothing).
  func record(nanoseconds spent: Int64, caught wasCaught: Bool) {
    polls.store(polls.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    if wasCaught { caught.store(caught.load(ordering: .relaxed) &+ 1, ordering: .relaxed) }
    nanoseconds.store(
      nanoseconds.load(ordering: .relaxed) &+ UInt64(max(0, spent)), ordering: .relaxed)
  }
}

/// How many loops of the process are polling right now. A loop polls only while fewer than
/// its thread's CPUs are: each polling loop keeps a CPU busy. (Not CPUs minus one: two loops
/// that hand work back and forth on two CPUs take turns, each polling while the other works.
/// When the thread that would wake a poll has no CPU to run on, the polls stop catching work
/// and the catch-rate review in `PollingWindow` pauses them.)
let pollingLoops = Atomic<Int>(0)

/// The polling limit new loops start with, in nanoseconds.
let defaultPollingLimit = Atomic<Int64>(50_000)

/// Installs, once per process, the fork handler that empties ``pollingLoops`` in a child:
/// only the forking thread lives on there, and it was not polling.
let pollingSlotsResetInForkedChild: Void = {
  pthread_atfork(nil, nil) { pollingLoops.store(0, ordering: .relaxed) }
}()

/// Takes one of the `slots` polling places; false when they are all taken.
func takePollingSlot(of slots: Int) -> Bool {
  var current = pollingLoops.load(ordering: .relaxed)
  while current < slots {
    let (exchanged, original) = pollingLoops.compareExchange(
      expected: current, desired: current + 1, ordering: .relaxed)
    if exchanged { return true }
    current = original
  }
  return false
}

func releasePollingSlot() {
  pollingLoops.wrappingSubtract(1, ordering: .relaxed)
}

/// `duration` in nanoseconds, clamped to the range a polling limit may have: 0 to 1 ms.
func pollingLimitNanoseconds(_ duration: Duration) -> Int64 {
  min(max(0, LoopClock.nanoseconds(of: duration).nanoseconds), maximumPollingLimitNanoseconds)
}

let maximumPollingLimitNanoseconds: Int64 = 1_000_000
