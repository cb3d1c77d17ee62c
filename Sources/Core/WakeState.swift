import CRunLoopLinux
import Glibc
import Synchronization

/// The wake-up protocol between a loop and the threads that wake it, in one place: the
/// state both sides read and write, and its transitions.
///
/// A wake-up costs a system call only when the loop is asleep, or about to be. While the
/// loop is in a pass, a wake-up only notes itself in the state, and the loop reads the note
/// before it sleeps, so the sleep does not block:
///
/// ```
///            wakeUp(): no write             step 7 takes the note, does not block
///   awake ───────────────────► noted ──────────────────────────────────────► awake
///     │ step 7 is about to block in epoll
///     ▼          wakeUp(): write           the loop takes the event
///   blocking ────────────────► written ──────────────────────────► awake
///
///   awake
///     │ step 7 polls before it sleeps
///     ▼          wakeUp(): no write         the poll ends
///   polling ─────────────────► marked ─────────────────────► awake
/// ```
///
/// - `awake`: the loop is in a pass and will read the state before it sleeps; a wake-up
///   notes itself (`noted`) and makes no system call.
/// - `noted`: a wake-up came during the pass; the coming sleep takes it instead of blocking.
/// - `blocking`: the loop is about to block in `epoll_wait`, or blocks there; a wake-up
///   writes to the `eventfd`.
/// - `written`: a wake-up wrote and the loop has not taken the event from `epoll` yet;
///   further wake-ups skip their write (what they changed is read after the loop takes it).
/// - `polling`: the loop polls before it sleeps (`EventRunLoop+Polling.swift`); a wake-up
///   marks the state instead of writing, and the poll sees the mark.
/// - `marked`: a wake-up came while the loop polled.
/// - `ignoring`: no run is active, or the loop is between its wake-up and its next pass.
///   A wake-up then has nothing to wake: the next pass looks at everything one can announce
///   (requests, signals, deadlines, descriptors). It writes nothing and leaves `dropped`,
///   as CFRunLoop ignores such wake-ups.
/// - `dropped`: a wake-up came while ignoring. The next pass checks the two things only the
///   end of a pass looks at (a stop, an emptied mode) and wakes itself for them.
///
/// ```
///              wakeUp(): no write         the next pass begins
///   ignoring ─────────────────► dropped ──────────────────────► awake (+ a check)
/// ```
///
/// A run whose mode watches no descriptor and has no deadline (no timeout, no timer) has
/// nothing for `epoll` to report but the wake-up itself. Its loop sleeps on a word of its
/// own instead (a `futex`), which costs the kernel less than an `eventfd` write and an
/// `epoll_wait` (a hop of a ping-pong on one CPU, a context switch included, about a fifth
/// less):
///
/// ```
///           wakeUp(): futex wake       the loop wakes
///   sleeping ─────────────────► roused ─────────────────► ignoring
/// ```
///
/// - `sleeping`: the loop sleeps on its word; a wake-up wakes it with a `futex` call and
///   writes nothing to the eventfd.
/// - `roused`: a wake-up woke it; further wake-ups do nothing until it is up.
///
/// Every access is sequentially consistent. A waker publishes its change (a signal, a
/// queued request) and then reads the state; the loop clears the state and then reads what
/// wakers publish, and it reads the state again as it enters a wait (`blocking`, `polling`,
/// `sleeping`). In the single total order of those operations one of the two sees the
/// other's write: either the pass sees the change, or the wait finds the note, or the waker
/// finds the loop waiting and wakes it.
struct WakeState: ~Copyable, Sendable {
  private enum Phase: UInt8 {
    case awake, noted, blocking, written, polling, marked, ignoring, dropped, sleeping, roused
  }

  /// What step 7 finds as it enters a wait (``beginBlocking()``, ``beginPolling()``).
  enum WaitEntry {
    /// The loop waits; a wake-up from now on reaches it (a write, a mark).
    case entered
    /// A wake-up came during the pass and noted itself: the loop does not wait, and the
    /// state is `awake` again.
    case woken
    /// A wake-up wrote to the eventfd, and `epoll` reports its event at once.
    case eventPending
  }

  /// Where a run began, for ``runEnds(beganIn:)``: inside a pass of an outer run, or in an
  /// ignoring window (no run active, or an outer run between waking and its next pass).
  enum RunStart {
    case inPass, ignoring, dropped
  }

  // A loop that is not running ignores wake-ups.
  private let phase = Atomic<UInt8>(Phase.ignoring.rawValue)
  /// The loop's `eventfd` (owned by its `Poller`), edge-triggered: every write reports one
  /// new event, so the loop never reads the counter back.
  private let eventDescriptor: Int32
  /// The word the loop sleeps on in `sleeping` (see `crl_sleep_word_wait`): a wake-up moves
  /// it on before it wakes the loop, so a loop that read it before it began to sleep never
  /// sleeps through the wake-up. Allocated, since the `futex` call needs its address.
  /// Touched only through the C functions' atomics.
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

  /// A wake-up: notes itself while the loop is in a pass, writes to the `eventfd` when the
  /// loop blocks in `epoll`, wakes it with `futex` when it sleeps on its word, marks a
  /// polling loop, and does nothing when a wake-up is outstanding. The caller has published
  /// its change with a sequentially consistent store or fence before this call.
  func request() {
    var current = phase.load(ordering: .sequentiallyConsistent)
    while true {
      let next: Phase
      switch Phase(rawValue: current) {
      case .awake: next = .noted
      case .blocking: next = .written
      case .polling: next = .marked
      case .ignoring: next = .dropped
      case .sleeping: next = .roused
      default: return  // noted, written, marked or roused: the loop will see that wake-up,
      // and this one (dropped: the next pass looks at what this one announces)
      }
      let (exchanged, original) = phase.compareExchange(
        expected: current, desired: next.rawValue, ordering: .sequentiallyConsistent)
      if exchanged {
        if next == .written { writeEvent() }
        if next == .roused { crl_sleep_word_wake(sleepWord) }
        return
      }
      current = original
    }
  }

  private func writeEvent() {
    var one: UInt64 = 1
    _ = withUnsafeBytes(of: &one) { write(eventDescriptor, $0.baseAddress, 8) }
  }

  // MARK: The loop's side (its thread only)

  /// The loop took the wake-up's event from `epoll` (`written` becomes `awake`). Called as
  /// soon as the batch holding it is taken, before any call-out: the event is reported once,
  /// and a call-out may run the loop nested; until this, every wake-up skips its write.
  func eventTaken() {
    phase.store(Phase.awake.rawValue, ordering: .sequentiallyConsistent)
  }

  /// The loop's sleep took the wake-up's event, and the loop stops counting wake-ups until
  /// its next pass: ``eventTaken()`` then ``startIgnoring()`` in one exchange, where the two
  /// would take two locked instructions. The state is `written` here (only the loop leaves
  /// it, and a wake-up's event means one was written), so `ignoring` is what the two would
  /// leave, except that a wake-up landing between them would have noted itself and kept the
  /// next sleep from blocking; here it finds `ignoring` (the next pass looks anyway).
  func eventTakenWhileIgnoring() {
    let before = phase.exchange(Phase.ignoring.rawValue, ordering: .sequentiallyConsistent)
    assert(before == Phase.written.rawValue, "a wake-up's event came without a write")
  }

  /// Sleeps on the loop's word until a wake-up (step 7 of a run that waits for nothing
  /// else), then starts ignoring wake-ups until the next pass, as after a sleep in `epoll`.
  /// Returns `nil` without sleeping when a wake-up already wrote to the eventfd: the caller
  /// takes its event from `epoll` instead. Otherwise returns whether a wake-up ended the
  /// sleep, or came during the pass and kept it from starting (a signal or a spurious
  /// return of `futex` can end it too; the pass then finds nothing new and the loop sleeps
  /// again).
  func sleepOnWord() -> Bool? {
    // Read before the state says `sleeping`: a wake-up that finds `sleeping` moves the word
    // on after this read, so the wait below returns at once if it came first.
    let seen = crl_sleep_word_load(sleepWord)
    switch enter(.sleeping) {
    case .woken: return true
    case .eventPending: return nil
    case .entered: break
    }
    crl_sleep_word_wait(sleepWord, seen)
    let before = phase.exchange(Phase.ignoring.rawValue, ordering: .sequentiallyConsistent)
    assert(
      before == Phase.roused.rawValue || before == Phase.sleeping.rawValue,
      "only a wake-up leaves 'sleeping'")
    return before == Phase.roused.rawValue
  }

  /// Step 7 is about to block in `epoll`: from here a wake-up writes to the eventfd.
  func beginBlocking() -> WaitEntry {
    enter(.blocking)
  }

  /// Takes a wake-up that noted itself during the pass, if there is one (the state goes
  /// back to `awake`): step 7 then does not wait at all, not even to poll.
  func takeNote() -> Bool {
    guard phase.load(ordering: .sequentiallyConsistent) == Phase.noted.rawValue else {
      return false
    }
    phase.store(Phase.awake.rawValue, ordering: .sequentiallyConsistent)
    return true
  }

  /// Whether a wake-up wrote to the eventfd and the loop has not taken its event yet.
  var hasEventPending: Bool {
    phase.load(ordering: .sequentiallyConsistent) == Phase.written.rawValue
  }

  /// Moves `awake` to `waiting`, or takes a noted wake-up instead (back to `awake`).
  private func enter(_ waiting: Phase) -> WaitEntry {
    let (exchanged, found) = phase.compareExchange(
      expected: Phase.awake.rawValue, desired: waiting.rawValue,
      ordering: .sequentiallyConsistent)
    if exchanged { return .entered }
    // Only the loop leaves `noted` (wake-ups leave it as it is), so a plain store does.
    guard found == Phase.noted.rawValue else {
      assert(found == Phase.written.rawValue, "step 7 found the loop neither awake nor woken")
      return .eventPending
    }
    phase.store(Phase.awake.rawValue, ordering: .sequentiallyConsistent)
    return .woken
  }

  /// Enters `polling` (see ``WaitEntry``). With ``WaitEntry/eventPending`` the poll sees
  /// the event in `epoll`.
  func beginPolling() -> WaitEntry {
    enter(.polling)
  }

  /// Whether a wake-up marked the poll.
  var isMarked: Bool {
    phase.load(ordering: .sequentiallyConsistent) == Phase.marked.rawValue
  }

  /// The loop has its events (after step 5 or 7): wake-ups are ignored until the next pass
  /// begins. A wake-up that is still outstanding (`noted`, or `written` with its event
  /// pending) stays and ends the next sleep, as one that came just before the loop woke does
  /// in CFRunLoop.
  func startIgnoring() {
    // Only the loop leaves `ignoring` and `dropped`, and only it makes `awake` and
    // `blocking`: when the state is neither of those now, it will not be before the loop's
    // next transition.
    var current = phase.load(ordering: .sequentiallyConsistent)
    while current == Phase.awake.rawValue || current == Phase.blocking.rawValue {
      let (exchanged, original) = phase.compareExchange(
        expected: current, desired: Phase.ignoring.rawValue, ordering: .sequentiallyConsistent)
      if exchanged { return }
      current = original
    }
  }

  /// A pass begins: wake-ups count again. Returns whether one was dropped since the last
  /// pass woke (the pass then checks what only the end of a pass looks at).
  func passBegins() -> Bool {
    var current = phase.load(ordering: .sequentiallyConsistent)
    while current == Phase.ignoring.rawValue || current == Phase.dropped.rawValue {
      let (exchanged, original) = phase.compareExchange(
        expected: current, desired: Phase.awake.rawValue, ordering: .sequentiallyConsistent)
      if exchanged { return current == Phase.dropped.rawValue }
      current = original
    }
    return false
  }

  /// A run begins (step 1): wake-ups count from here on, as CFRunLoop gives each run a
  /// fresh, cleared "ignore wake-ups" flag. `ignoringWindow` tells whether the run begins
  /// in an ignoring window (no run active, or an outer run between waking and its next
  /// pass; a wake-up still outstanding leaves the state `noted`, or `written` with its
  /// event pending, there). Returns where the run began.
  func runBegins(inIgnoringWindow ignoringWindow: Bool) -> RunStart {
    guard ignoringWindow else { return .inPass }
    var current = phase.load(ordering: .sequentiallyConsistent)
    while current == Phase.ignoring.rawValue || current == Phase.dropped.rawValue {
      let (exchanged, original) = phase.compareExchange(
        expected: current, desired: Phase.awake.rawValue, ordering: .sequentiallyConsistent)
      if exchanged { return current == Phase.ignoring.rawValue ? .ignoring : .dropped }
      current = original
    }
    return .ignoring
  }

  /// A run ends (step 10): back to the window it began in. Returns whether a wake-up the
  /// run dropped must be made now, as a real one: a run nested inside an outer pass hands it
  /// to that pass, which may already have looked at what it announced.
  func runEnds(beganIn start: RunStart) -> Bool {
    var current = phase.load(ordering: .sequentiallyConsistent)
    while true {
      let next: Phase
      switch (Phase(rawValue: current), start) {
      case (.ignoring, .inPass), (.dropped, .inPass): next = .awake
      case (.ignoring, .ignoring): return false
      case (.ignoring, .dropped), (.dropped, _): next = .dropped
      case (.awake, .ignoring): next = .ignoring  // ended before any pass
      case (.awake, .dropped): next = .dropped
      default: return false  // awake inside a pass, or noted or written: it ends the next sleep
      }
      let (exchanged, original) = phase.compareExchange(
        expected: current, desired: next.rawValue, ordering: .sequentiallyConsistent)
      if exchanged { return current == Phase.dropped.rawValue && start == .inPass }
      current = original
    }
  }

  /// Leaves `polling` for `awake`; returns whether a wake-up marked the poll (also when it
  /// came after the poll's last look). After this, wake-ups note themselves again.
  func endPolling() -> Bool {
    let (exchanged, _) = phase.compareExchange(
      expected: Phase.polling.rawValue, desired: Phase.awake.rawValue,
      ordering: .sequentiallyConsistent)
    if exchanged { return false }
    phase.store(Phase.awake.rawValue, ordering: .sequentiallyConsistent)
    return true
  }
}
