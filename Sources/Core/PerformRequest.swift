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
/// All members are safe to use from any thread.
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
  public let modes: [LoopMode]

  let body: @Sendable () -> Void
  private let stateBits = Atomic<UInt8>(State.pending.rawValue)
  private let done: DispatchSemaphore?
  // Strong: a weak reference costs side-table traffic on every request. The cycle it makes
  // with the loop's queue lasts only while the request is queued: the pass that runs it,
  // `cancel()` and the thread's exit all take it out of the queue.
  private let loop: EventRunLoop

  init(
    name: String, modes: [LoopMode], loop: EventRunLoop, waitable: Bool,
    body: @escaping @Sendable () -> Void
  ) {
    self.name = name
    self.modes = modes
    self.loop = loop
    self.body = body
    self.done = waitable ? DispatchSemaphore(value: 0) : nil
  }

  /// The request's state now.
  ///
  /// ```swift
  /// let request = loop.perform { work() }
  /// request.state  // .pending until the loop runs it
  /// ```
  public var state: State { State(rawValue: stateBits.load(ordering: .acquiring)) ?? .pending }

  /// Cancels the request if it has not started; returns whether it did. A cancelled request
  /// never runs.
  ///
  /// ```swift
  /// let request = loop.perform { expensive() }
  /// _ = request.cancel()
  /// ```
  @discardableResult
  public func cancel() -> Bool {
    guard transition(from: .pending, to: .cancelled) else { return false }
    loop.dequeue(self)
    done?.signal()
    return true
  }

  /// Whether the request may run in `mode`, given whether `mode` is one of the loop's
  /// common modes.
  func matches(_ mode: LoopMode, modeIsCommon: Bool) -> Bool {
    modes.contains(mode) || (modeIsCommon && modes.contains(.common))
  }

  func transition(from old: State, to new: State) -> Bool {
    stateBits.compareExchange(
      expected: old.rawValue, desired: new.rawValue, ordering: .acquiringAndReleasing
    ).exchanged
  }

  /// Runs the body if still pending; the loop calls this on its thread.
  func runIfPending(on loop: EventRunLoop) {
    guard transition(from: .pending, to: .running) else { return }
    loop.withCallout(.block, name: name, dueAt: nil, body)
    stateBits.store(State.finished.rawValue, ordering: .releasing)
    done?.signal()
  }

  /// Marks a request that will never run because its loop is gone.
  func abandon() {
    if transition(from: .pending, to: .abandoned) { done?.signal() }
  }

  /// Blocks until the request ended or `deadline` passed; returns the final state, or
  /// `nil` on time-out.
  func wait(until deadline: ContinuousClock.Instant?) -> State? {
    guard let done else { return state }
    if let deadline {
      let remaining = deadline - .now
      let nanoseconds = remaining <= .zero ? 0 : remaining.wholeNanoseconds
      if done.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut { return nil }
    } else {
      done.wait()
    }
    return state
  }
}

extension Duration {
  /// The duration in whole nanoseconds, saturated to `Int` range.
  var wholeNanoseconds: Int {
    let (seconds, attoseconds) = components
    if seconds >= Int64(Int.max / 1_000_000_000) { return Int.max }
    if seconds <= Int64(Int.min / 1_000_000_000) { return Int.min }
    return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
  }
}
