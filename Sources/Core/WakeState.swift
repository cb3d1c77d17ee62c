import Glibc
import Synchronization

/// The wake-up protocol between a loop and the threads that wake it, in one place: the
/// state both sides read and write, and its four transitions.
///
/// A loop that sleeps in `epoll_wait` is woken by a write to its `eventfd`. A write is a
/// system call, so a wake-up skips it when the loop will see the work anyway:
///
/// ```
///            wakeUp(): write          the loop takes the event
///   awake ───────────────────► written ──────────────────────► awake
///     │ the loop starts polling
///     ▼          wakeUp(): no write         the poll ends
///   polling ─────────────────► marked ─────────────────────► awake
/// ```
///
/// - `awake`: no wake-up is outstanding; the next ``request(writingTo:)`` writes.
/// - `written`: a wake-up wrote and the loop has not taken the event from `epoll` yet;
///   further wake-ups skip their write (what they changed is read after the loop takes it).
/// - `polling`: the loop polls before it sleeps (`EventRunLoop+Polling.swift`); a wake-up
///   marks the state instead of writing, and the poll sees the mark.
/// - `marked`: a wake-up came while the loop polled.
///
/// Every access is sequentially consistent. A waker publishes its change (a signal, a
/// queued request) and then reads the state; the loop clears the state and then reads what
/// wakers publish. In the single total order of those operations one of the two sees the
/// other's write: either the pass sees the change, or the waker sees the state clear and
/// writes, which reports a new event.
struct WakeState: ~Copyable, Sendable {
  private enum Phase: UInt8 {
    case awake, written, polling, marked
  }

  private let phase = Atomic<UInt8>(Phase.awake.rawValue)
  /// The loop's `eventfd` (owned by its `Poller`), edge-triggered: every write reports one
  /// new event, so the loop never reads the counter back.
  private let eventDescriptor: Int32

  init(eventDescriptor: Int32) {
    self.eventDescriptor = eventDescriptor
  }

  // MARK: The waker's side (any thread)

  /// A wake-up: writes to the `eventfd` when the loop is `awake`, marks a polling loop,
  /// and does nothing when a wake-up is outstanding. The caller has published its change
  /// with a sequentially consistent store or fence before this call.
  func request() {
    var current = phase.load(ordering: .sequentiallyConsistent)
    while true {
      let next: Phase
      switch Phase(rawValue: current) {
      case .awake: next = .written
      case .polling: next = .marked
      default: return  // written or marked: the loop will see that wake-up, and this one
      }
      let (exchanged, original) = phase.compareExchange(
        expected: current, desired: next.rawValue, ordering: .sequentiallyConsistent)
      if exchanged {
        if next == .written { writeEvent() }
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

  /// Enters `polling` when the loop is `awake`; returns whether it did. With `written`, the
  /// event is on its way and the poll sees it in `epoll`.
  func beginPolling() -> Bool {
    phase.compareExchange(
      expected: Phase.awake.rawValue, desired: Phase.polling.rawValue,
      ordering: .sequentiallyConsistent
    ).exchanged
  }

  /// Whether a wake-up marked the poll.
  var isMarked: Bool {
    phase.load(ordering: .sequentiallyConsistent) == Phase.marked.rawValue
  }

  /// Leaves `polling` for `awake`; returns whether a wake-up marked the poll (also when it
  /// came after the poll's last look). After this, wake-ups write again.
  func endPolling() -> Bool {
    let (exchanged, _) = phase.compareExchange(
      expected: Phase.polling.rawValue, desired: Phase.awake.rawValue,
      ordering: .sequentiallyConsistent)
    if exchanged { return false }
    phase.store(Phase.awake.rawValue, ordering: .sequentiallyConsistent)
    return true
  }
}
