/// What a run-loop source delivers, as an `AsyncSequence`: timer ticks, port messages,
/// signals, descriptor readiness, named-port requests (the Timers and Ports modules make
/// them, for example `loop.ticks(every:)`).
///
/// The loop produces, a task consumes. The loop never waits for the consumer (a loop blocked
/// on a slow reader would stop every other source of its thread), so between the two sits a
/// buffer whose ``Buffering`` policy says what goes when it is full; everything it lets go is
/// counted in ``droppedCount``, never lost silently. A source whose events are a state rather
/// than a stream (descriptor readiness) pauses instead, and drops nothing.
///
/// The sequence has one consumer: iterate it once. Ending the consuming task (cancelling it,
/// leaving the `for await` loop, dropping the iterator) ends the sequence, and the source is
/// taken off its loop at once; so is a sequence released without being iterated. A loop
/// whose thread exits ends the sequence: the consumer drains what the buffer holds, then
/// gets `nil`, and ``failure`` says `loopThreadExited`.
///
/// ```swift
/// for await tick in loop.ticks(every: .seconds(1)) {
///   print("tick at", tick)
/// }
/// ```
public final class LoopEvents<Element: Sendable>: AsyncSequence, Sendable {
  /// What the buffer between the loop and the consumer keeps when it is full.
  ///
  /// ```swift
  /// let ticks = loop.ticks(every: .milliseconds(10), buffering: .newest(1))
  /// ```
  public enum Buffering: Sendable, Hashable {
    /// Keep the newest `count` elements: a full buffer lets its oldest go (for ticks: a
    /// slow consumer sees the latest).
    case newest(Int)
    /// Keep the oldest `count` elements: a full buffer refuses new ones (for messages: the
    /// first ones, in order).
    case oldest(Int)
    /// Keep everything (memory grows with a slow consumer).
    case unbounded
  }

  /// The policy of this sequence's buffer.
  ///
  /// ```swift
  /// if case .newest(let count) = ticks.buffering { print("keeps the last", count) }
  /// ```
  public let buffering: Buffering
  let buffer: LoopEventBuffer<Element>

  /// Makes a sequence; the module that owns the source feeds it through `feed`.
  ///
  /// - Parameters:
  ///   - onDemand: called (on the consumer's thread) when the consumer waits on an empty
  ///     buffer; a paused source resumes here.
  ///   - onEnd: called once when the sequence ends (consumer gone or cancelled); takes the
  ///     source off its loop.
  package init(
    buffering: Buffering, onDemand: (@Sendable () -> Void)? = nil,
    onEnd: @escaping @Sendable () -> Void
  ) {
    self.buffering = buffering
    self.buffer = LoopEventBuffer(buffering: buffering, onDemand: onDemand, onEnd: onEnd)
  }

  deinit {
    buffer.end()
  }

  /// Makes a sequence fed by a source, the way every source's sequence is set up: `make`
  /// builds the source around the sequence's feed, `start` puts it on its loop, and `stop`
  /// takes it off (once, when the sequence ends, or at once if `start` throws). The
  /// sequence ends with `loopThreadExited` when `loop`'s thread exits (see ``failure``).
  ///
  /// - Parameters:
  ///   - onDemand: called with the source when the consumer waits on an empty buffer (a
  ///     paused source resumes here); not called once the sequence has ended.
  /// - Returns: the sequence and its source.
  /// - Throws: what `make` or `start` throws.
  package static func fed<Source: Sendable>(
    on loop: EventRunLoop, buffering: Buffering,
    by make: (LoopEventFeed<Element>) throws(RunLoopError) -> Source,
    start: (Source) throws(RunLoopError) -> Void,
    stop: @escaping @Sendable (Source) -> Void,
    onDemand: (@Sendable (Source) -> Void)? = nil
  ) throws(RunLoopError) -> (events: LoopEvents<Element>, source: Source) {
    // Set once the source exists; taken by the first of the sequence's end and a failed start.
    let slot = GuardedState<Source?>(nil)
    let demand = onDemand.map { onDemand in
      { @Sendable in if let source = slot.withLock({ $0 }) { onDemand(source) } }
    }
    let events = LoopEvents(buffering: buffering, onDemand: demand) {
      if let source = slot.withLock({ $0.take() }) { stop(source) }
    }
    let source = try make(events.feed)
    slot.withLock { $0 = source }
    do {
      try start(source)
    } catch {
      if let source = slot.withLock({ $0.take() }) { stop(source) }
      throw error
    }
    events.endsWithThread(of: loop)
    return (events, source)
  }

  /// The producer's side, for the source's handler (safe from any thread).
  package var feed: LoopEventFeed<Element> { LoopEventFeed(buffer: buffer) }

  /// How many elements the buffer let go because it was full.
  ///
  /// ```swift
  /// print("missed \(ticks.droppedCount) ticks")
  /// ```
  public var droppedCount: Int { buffer.droppedCount }

  /// Whether the sequence has ended (its consumer went away or was cancelled, or the source
  /// ended).
  ///
  /// ```swift
  /// if messages.isFinished { print("no longer listening") }
  /// ```
  public var isFinished: Bool { buffer.isFinished }

  /// Why the source ended the sequence, when something went wrong on its side: a
  /// ``RunLoopError`` with code ``RunLoopError/Code/loopThreadExited`` once the loop's
  /// thread exited. `nil` while the sequence runs, and when the consumer ended it.
  ///
  /// ```swift
  /// for await tick in ticks { print(tick) }
  /// if let failure = ticks.failure { print("the ticks ended:", failure) }
  /// ```
  public var failure: RunLoopError? { buffer.failure }

  /// Ends the sequence with ``RunLoopError/Code/loopThreadExited`` (see ``failure``) when
  /// `loop`'s thread exits, or at once when it has exited already. Every source's sequence
  /// calls it with the loop its source is on.
  package func endsWithThread(of loop: EventRunLoop) {
    let buffer = self.buffer
    let exited: @Sendable () -> Void = {
      buffer.finish(failure: .loopThreadExited("the thread of the sequence's loop exited"))
    }
    guard let token = loop.whenThreadExits(exited) else { return exited() }
    buffer.whenDone { loop.cancelThreadExitHandler(token) }
  }

  /// The iterator; make one per sequence.
  ///
  /// ```swift
  /// var iterator = ticks.makeAsyncIterator()
  /// let first = await iterator.next()
  /// ```
  public func makeAsyncIterator() -> Iterator { Iterator(consumer: LoopEventConsumer(self)) }

  /// Waits for the next element; `nil` once the sequence has ended.
  ///
  /// ```swift
  /// while let tick = await iterator.next() { print(tick) }
  /// ```
  public struct Iterator: AsyncIteratorProtocol {
    let consumer: LoopEventConsumer<Element>

    /// The next element, or `nil` when the sequence ended (or the task was cancelled, which
    /// ends it).
    ///
    /// ```swift
    /// let tick = await iterator.next()
    /// ```
    public mutating func next() async -> Element? {
      await consumer.sequence.buffer.next()
    }
  }
}

/// The handle a source's handler feeds a ``LoopEvents`` through. It does not keep the
/// sequence alive: once the consumer is gone, feeding does nothing.
package struct LoopEventFeed<Element: Sendable>: Sendable {
  let buffer: LoopEventBuffer<Element>

  /// What became of an element offered to the buffer.
  package enum Outcome: Sendable, Hashable {
    /// Kept (or handed straight to a waiting consumer).
    case kept
    /// Refused because the buffer was full (`.oldest` policy); counted in `droppedCount`.
    case refused
    /// Refused because the sequence has ended or finished.
    case ended
  }

  /// Offers `element` to the buffer; returns whether it was kept.
  @discardableResult
  package func yield(_ element: Element) -> Bool { buffer.offer(element) == .kept }

  /// Offers `element` to the buffer; says why it was not kept, for a producer that must
  /// answer for what it loses (a request whose client waits).
  package func offer(_ element: Element) -> Outcome { buffer.offer(element) }

  /// Ends the sequence from the source's side (the consumer sees `nil` after the buffer).
  package func finish() { buffer.finish() }

  /// Whether the buffer is empty (a paused source resumes when it is).
  package var isEmpty: Bool { buffer.isEmpty }
}

/// Ends the sequence when the iterator goes away (the consuming task left its loop).
final class LoopEventConsumer<Element: Sendable>: Sendable {
  let sequence: LoopEvents<Element>

  init(_ sequence: LoopEvents<Element>) {
    self.sequence = sequence
  }

  deinit {
    sequence.buffer.end()
  }
}

/// The buffer itself, behind one lock; no call-out runs under it.
final class LoopEventBuffer<Element: Sendable>: Sendable {
  private struct State {
    var elements: [Element] = []
    var waiter: UnsafeContinuation<Element?, Never>?
    var dropped = 0
    // The source has nothing more (the consumer drains the rest).
    var finished = false
    // The consumer is gone or cancelled: nothing more is delivered.
    var ended = false
    var onEnd: (@Sendable () -> Void)?
    // Why the source finished it, when it failed.
    var failure: RunLoopError?
    // Forgets the loop's exit handler once the sequence is over either way.
    var onDone: (@Sendable () -> Void)?
  }
  private let state: GuardedState<State>
  private let buffering: LoopEvents<Element>.Buffering
  private let onDemand: (@Sendable () -> Void)?

  init(
    buffering: LoopEvents<Element>.Buffering, onDemand: (@Sendable () -> Void)?,
    onEnd: @escaping @Sendable () -> Void
  ) {
    self.buffering = buffering
    self.onDemand = onDemand
    self.state = GuardedState(State(onEnd: onEnd))
  }

  var droppedCount: Int { state.withLock { $0.dropped } }
  var failure: RunLoopError? { state.withLock { $0.failure } }

  /// Runs `body` once the sequence has finished or ended (at once if it has).
  func whenDone(_ body: @escaping @Sendable () -> Void) {
    let now = state.withLock { state -> Bool in
      guard !state.ended, !state.finished else { return true }
      state.onDone = body
      return false
    }
    if now { body() }
  }
  var isFinished: Bool { state.withLock { $0.ended || ($0.finished && $0.elements.isEmpty) } }
  var isEmpty: Bool { state.withLock { $0.elements.isEmpty } }

  func offer(_ element: Element) -> LoopEventFeed<Element>.Outcome {
    // An element let go is released after the lock: its deinit may have work to do (a
    // request answers its client).
    var evicted: Element?
    let (waiter, outcome) = state.withLock {
      state -> (UnsafeContinuation<Element?, Never>?, LoopEventFeed<Element>.Outcome) in
      guard !state.ended, !state.finished else { return (nil, .ended) }
      if let waiter = state.waiter.take() { return (waiter, .kept) }
      switch buffering {
      case .unbounded:
        state.elements.append(element)
      case .newest(let limit):
        if state.elements.count >= max(limit, 1) {
          evicted = state.elements.removeFirst()
          state.dropped += 1
        }
        state.elements.append(element)
      case .oldest(let limit):
        guard state.elements.count < max(limit, 1) else {
          state.dropped += 1
          return (nil, .refused)
        }
        state.elements.append(element)
      }
      return (nil, .kept)
    }
    waiter?.resume(returning: element)
    withExtendedLifetime(evicted) {}
    return outcome
  }

  func finish(failure: RunLoopError? = nil) {
    let (waiter, onDone) = state.withLock { state in
      if !state.finished, !state.ended { state.failure = failure }
      state.finished = true
      return (state.elements.isEmpty ? state.waiter.take() : nil, state.onDone.take())
    }
    waiter?.resume(returning: nil)
    onDone?()
  }

  /// The consumer is gone or cancelled: wakes a waiting `next()` with `nil` and takes the
  /// source off its loop, once. The elements left in the buffer are released after the
  /// source is off its loop (and outside the lock), so a source that answers for them (a
  /// request's client) knows by then that it stopped.
  func end() {
    let (waiter, onEnd, onDone, left) = state.withLock { state in
      state.ended = true
      defer { state.elements = [] }
      return (state.waiter.take(), state.onEnd.take(), state.onDone.take(), state.elements)
    }
    waiter?.resume(returning: nil)
    onEnd?()
    onDone?()
    withExtendedLifetime(left) {}
  }

  func next() async -> Element? {
    await withTaskCancellationHandler {
      // Unsafe (unchecked) continuation: the buffer's state, under its lock, holds it and
      // resumes it exactly once (with an element, at the end, or on cancellation).
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Element?, Never>) in
        let outcome = state.withLock { state -> NextOutcome<Element> in
          if state.ended { return .none }
          if !state.elements.isEmpty { return .element(state.elements.removeFirst()) }
          if state.finished { return .none }
          state.waiter = continuation
          return .wait
        }
        switch outcome {
        case .element(let element): continuation.resume(returning: element)
        case .none: continuation.resume(returning: nil)
        case .wait: onDemand?()
        }
      }
    } onCancel: {
      end()
    }
  }
}

/// What `next()` found in the buffer.
private enum NextOutcome<Element> {
  case element(Element)
  case none
  case wait
}
