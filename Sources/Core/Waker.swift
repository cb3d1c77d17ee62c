import CRunLoopLinux
import Glibc
import Synchronization

/// The wake-up protocol between a loop and the threads that wake it: one word of four
/// states, and the transitions each side makes. `Models/Waker.pml` is the same protocol,
/// with the same names, checked exhaustively by spin.
///
/// ```
///              wake(): no system call          the loop takes the note
///   awake ──────────────────────────► noted ───────────────────────────► awake
///     │                                          (step 7 does not block)
///     │ step 7 begins to wait (beginWait)
///     ▼        wake(): eventfd write, futex
///   waiting ─────────── wake, or nothing ──► woken ──── endWait ───────► awake
///   (epoll | word | poll)  for a poll
/// ```
///
/// - `awake`: the loop is in a pass, or no run is active. A wake-up only notes itself.
/// - `noted`: a wake-up came. The loop takes the note when it next looks: step 7 then does
///   not block, and a pass that begins after the loop woke drops it (below).
/// - `waiting`: step 7 waits, in one of three ways a wake-up must end differently: blocked
///   in `epoll` (write to the `eventfd`), asleep on the loop's word (`futex` wake), or
///   polling (nothing: the poll reads the state between its looks).
/// - `woken`: a wake-up ended (or is ending) the wait; further wake-ups do nothing.
///
/// Only a wake-up leaves `awake` for `noted` and `waiting` for `woken`; only the loop
/// makes every other transition. So the loop leaves `noted` with a plain store, and a
/// compare-and-swap is needed only where both sides may move at once.
///
/// Wakers never drop a wake-up. Whether a note counts is the loop's decision, made on its
/// own thread: CFRunLoop ignores wake-ups from the moment it wakes until its next pass
/// begins, and while no run is active, since that pass looks at everything a wake-up can
/// announce. The loop does the same by dropping, when such a pass begins, a note made
/// since it woke; a note made before stays until a wait takes it (see
/// `EventRunLoop.startCountingWakeUps(_:)` and `startIgnoringWakeUps()`).
///
/// Every access is sequentially consistent. A waker publishes its change (a queued request,
/// a signal) and then reads the state; the loop takes the note and then reads what wakers
/// publish, and it reads the state again as it begins to wait. In the one total order of
/// those operations one of the two sees the other's write: either the pass sees the change,
/// or the wait finds the note, or the waker finds the loop waiting and wakes it.
struct Waker: ~Copyable, Sendable {
  /// How step 7 waits, which says what a wake-up does to end the wait.
  enum Wait: UInt8 {
    /// Blocked in `epoll_wait`: a wake-up writes to the `eventfd`.
    case epoll = 2
    /// Asleep on the loop's word (a run with no descriptor and no deadline): a wake-up moves
    /// the word on and wakes it with `futex`.
    case word = 3
    /// Polling before it sleeps (`EventRunLoop+Polling.swift`): a wake-up only sets the
    /// state, which the poll reads between its non-blocking looks.
    case poll = 4
  }

  // The word's values: `waiting` is one of `Wait`'s raw values.
  private static let awake: UInt8 = 0
  private static let noted: UInt8 = 1
  private static let woken: UInt8 = 5

  private let state = Atomic<UInt8>(awake)
  /// The loop's `eventfd` (owned by its `Poller`), edge-triggered: every write reports one
  /// new event, so the loop never reads the counter back.
  private let eventDescriptor: Int32
  /// The word the loop sleeps on in `waiting(.word)`: a wake-up moves it on before it wakes
  /// the loop, so a loop that read it before it began to wait never sleeps through the
  /// wake-up. Allocated, since the `futex` call needs its address; touched only through the
  /// C functions' atomics.
  private nonisolated(unsafe) let sleepWord: UnsafeMutablePointer<UInt32>

  init(eventDescriptor: Int32) {
    self.eventDescriptor = eventDescriptor
    sleepWord = .allocate(capacity: 1)
    sleepWord.initialize(to: 0)
  }

  deinit {
    sleepWord.deallocate()
  }

  // MARK: The waker's side (any thread)

  /// A wake-up: notes itself when the loop is awake, ends its wait when it waits, and does
  /// nothing when a wake-up is outstanding. The caller has published its change with a
  /// sequentially consistent store or fence before this call.
  func wake() {
    var current = state.load(ordering: .sequentiallyConsistent)
    while current != Self.noted && current != Self.woken {
      let next = current == Self.awake ? Self.noted : Self.woken
      let (exchanged, found) = state.compareExchange(
        expected: current, desired: next, ordering: .sequentiallyConsistent)
      if exchanged {
        endWait(of: Wait(rawValue: current))
        return
      }
      current = found
    }
  }

  /// What a waker that just moved `waiting` to `woken` does to end the loop's wait (`nil`:
  /// the loop was awake, and a note is all it needs).
  private func endWait(of wait: Wait?) {
    switch wait {
    case .epoll:
      var one: UInt64 = 1
      _ = withUnsafeBytes(of: &one) { write(eventDescriptor, $0.baseAddress, 8) }
    case .word: crl_sleep_word_wake(sleepWord)
    case .poll, nil: break
    }
  }

  // MARK: The loop's side (its thread only)

  /// Takes a note, if there is one (`noted` becomes `awake`). Returns whether there was.
  func takeNote() -> Bool {
    guard state.load(ordering: .sequentiallyConsistent) == Self.noted else { return false }
    state.store(Self.awake, ordering: .sequentiallyConsistent)
    return true
  }

  /// Whether a wake-up noted itself and the loop has not taken the note.
  var hasNote: Bool {
    state.load(ordering: .sequentiallyConsistent) == Self.noted
  }

  /// Step 7 begins to wait in the way `wait` says; from here a wake-up ends the wait.
  /// Returns `false` without waiting when a wake-up noted itself first: the note is taken
  /// (the state is `awake` again) and step 7 does not block.
  func beginWait(_ wait: Wait) -> Bool {
    let (exchanged, found) = state.compareExchange(
      expected: Self.awake, desired: wait.rawValue, ordering: .sequentiallyConsistent)
    guard !exchanged else { return true }
    assert(found == Self.noted, "a wait began while the loop was not awake")
    state.store(Self.awake, ordering: .sequentiallyConsistent)
    return false
  }

  /// The wait is over (`waiting` or `woken` becomes `awake`). Returns whether a wake-up
  /// ended it (it may also have ended for an event, a deadline, a signal, or spuriously).
  func endWait() -> Bool {
    state.exchange(Self.awake, ordering: .sequentiallyConsistent) == Self.woken
  }

  /// Whether a wake-up ended the wait; the poll reads it between its looks.
  var isWoken: Bool {
    state.load(ordering: .sequentiallyConsistent) == Self.woken
  }

  /// Sleeps on the loop's word until a wake-up (step 7 of a run with nothing else to wait
  /// for). Returns whether a wake-up ended the sleep or kept it from starting; a signal or
  /// a spurious return of `futex` can end it too, and the pass then finds nothing new.
  func sleepOnWord() -> Bool {
    // Read before the state says `waiting`: a wake-up that finds it waiting moves the word
    // on after this read, so the wait below returns at once if the wake-up came first.
    let seen = crl_sleep_word_load(sleepWord)
    guard beginWait(.word) else { return true }
    crl_sleep_word_wait(sleepWord, seen)
    return endWait()
  }
}
