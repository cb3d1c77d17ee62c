import Dispatch
import Synchronization

/// A closure queued to run on a run loop's thread in given modes: the guide's
/// `performSelector:onThread:` and CoreFoundation's `CFRunLoopPerformBlock`, returned so
/// that it can be cancelled before it runs.
///
/// ```swift
/// let request = worker.perform { print("on the worker's thread") }
/// if request.cancel() { print("it never ran") }
/// ```
///
/// All members are safe to use from any thread. Every `perform` makes a new request: a
/// reference to one, strong or weak, always stands for that request.
public final class PerformRequest: Sendable {
  /// Where a request is in its life.
  ///
  /// ```swift
  /// if request.state == .pending { request.cancel() }
  /// ```
  public enum State: UInt8, Sendable, CustomStringConvertible {
    /// Queued, not yet run.
    case pending
    /// Running now.
    case running
    /// Ran to the end.
    case finished
    /// Cancelled before it ran.
    case cancelled
    /// Never ran because the loop's thread exited first.
    case abandoned

    /// The case name.
    ///
    /// ```swift
    /// "\(PerformRequest.State.finished)"  // "finished"
    /// ```
    public var description: String {
      switch self {
      case .pending: "pending"
      case .running: "running"
      case .finished: "finished"
      case .cancelled: "cancelled"
      case .abandoned: "abandoned"
      }
    }
  }

  /// The request's name in traces.
  ///
  /// ```swift
  /// let request = loop.perform(name: "refresh") { refresh() }
  /// request.name  // "refresh"
  /// ```
  public let name: String
  /// The modes it may run in (``LoopMode/common`` stands for the loop's common modes).
  ///
  /// ```swift
  /// let request = loop.perform(inModes: [.default]) { redraw() }
  /// request.modes  // [.default]
  /// ```
  public var modes: [LoopMode] { otherModes ?? EventRunLoop.commonModesOnly }

  // Touched only by the thread that moves the request out of `pending` (the loop's, to run
  // it; a canceller's or the exiting thread's, to drop it): the state's compare-and-swap
  // picks exactly one, and orders its use after everything before.
  private nonisolated(unsafe) var body: (@Sendable () -> Void)?
  // The modes unless they are the default, `[.common]` (nil): matching is then one flag, not
  // a search, and a request made with the default holds no array, so every thread that
  // performs does not retain and release the one shared default array (two atomic
  // operations on a cache line the loops' threads would pass back and forth).
  private let otherModes: [LoopMode]?
  private let stateBits = Atomic<UInt8>(State.pending.rawValue)
  private let done: DispatchSemaphore?
  // When and by whom it was queued, while some instrument wants call-outs (see
  // `CauseStamp`). Written before the request is queued (under the loop's lock), read by the
  // loop thread after it takes the request out.
  nonisolated(unsafe) var stamp: CapturedCause?
  // The next request in the `RequestList` this one is in (the loop's queue or a batch);
  // touched only by the list's owner: under the loop's lock, or on its thread.
  nonisolated(unsafe) var next: PerformRequest?

  init(
    name: String, modes: [LoopMode], waitable: Bool,
    body: @escaping @Sendable () -> Void
  ) {
    self.name = name
    self.otherModes = Self.isCommonModesOnly(modes) ? nil : modes
    self.body = body
    self.done = waitable ? DispatchSemaphore(value: 0) : nil
  }

  /// A request that runs in the common modes and is not waited for: what
  /// ``EventRunLoop/perform(_:)`` makes.
  init(name: String, body: @escaping @Sendable () -> Void) {
    self.name = name
    self.otherModes = nil
    self.body = body
    self.done = nil
  }

  deinit {
    // A request dropped while still linked (a list let go of as a whole) unlinks the rest
    // of the chain one request at a time: releasing it recursively could overflow the stack.
    var link = next.take()
    while let request = link.take() { link = request.next.take() }
  }

  private static func isCommonModesOnly(_ modes: [LoopMode]) -> Bool {
    modes.count == 1 && modes[0] == .common
  }

  /// The request's state now.
  ///
  /// ```swift
  /// let request = loop.perform { work() }
  /// request.state  // .pending until the loop runs it
  /// ```
  public var state: State { State(rawValue: stateBits.load(ordering: .acquiring)) ?? .pending }

  /// Cancels the request if it has not started; returns whether it did. A cancelled request
  /// never runs, and its closure (with what it captured) is released at once. The request
  /// itself stays in its loop's queue, inert, until the loop next takes a batch of requests
  /// (in any mode): a request holds no reference to its loop, so queueing one costs the
  /// loop's reference count nothing. It no longer keeps a run of its modes from finishing.
  ///
  /// ```swift
  /// let request = loop.perform { expensive() }
  /// _ = request.cancel()
  /// ```
  @discardableResult
  public func cancel() -> Bool {
    guard transition(from: .pending, to: .cancelled) else { return false }
    body = nil
    done?.signal()
    return true
  }

  /// Whether the request may run in a run in `active`.
  func matches(_ active: ActiveMode) -> Bool {
    guard let otherModes else { return active.isCommon }
    return otherModes.contains(active.mode) || (active.isCommon && otherModes.contains(.common))
  }

  func transition(from old: State, to new: State) -> Bool {
    stateBits.compareExchange(
      expected: old.rawValue, desired: new.rawValue, ordering: .acquiringAndReleasing
    ).exchanged
  }

  /// Runs the body if still pending; the loop calls this on its thread.
  func runIfPending(on loop: EventRunLoop) {
    guard transition(from: .pending, to: .running) else { return }
    // Moved out: the request lets go of its closure as it runs it.
    if let body = body.take() {
      loop.callOut(
        .block, name: name, dueAt: stamp?.stamp.queuedAt, cause: stamp?.stamp.cause,
        contexts: stamp?.contexts, body)
    }
    stateBits.store(State.finished.rawValue, ordering: .releasing)
    done?.signal()
  }

  /// Marks a request that will never run because its loop is gone; returns whether it was
  /// still pending (a cancelled request is not abandoned).
  @discardableResult
  func abandon() -> Bool {
    guard transition(from: .pending, to: .abandoned) else { return false }
    body = nil
    done?.signal()
    return true
  }

  /// Blocks until the request ended or `deadline` passed; returns the final state, or
  /// `nil` on time-out.
  func wait(until deadline: ContinuousClock.Instant?) -> State? {
    guard let done else { return state }
    if let deadline {
      let remaining = deadline - .now
      let nanoseconds = max(0, LoopClock.nanoseconds(of: remaining).nanoseconds)
      if done.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .timedOut { return nil }
    } else {
      done.wait()
    }
    return state
  }
}
