import DequeModule
import Dispatch
import Foundation
import RunLoopCore

/// A queue that loop threads fill and one writer thread drains: the way every trace sink
/// keeps its writing (disk, journald) off the traced loop.
///
/// Producers only lock, append and, when the writer is idle, post a semaphore. With a
/// `capacity`, a full queue drops the new element and counts it instead of waiting: the
/// loop never waits for the writer. Without one the queue grows as needed (the JSON sink's
/// lossless choice).
///
/// A sink can also queue its own bookkeeping (``enqueueControl(_:)``): such an element is
/// never dropped, is taken while closing, and is not counted as a record; the writer sees it
/// in its batch after everything queued before it.
package final class WriterThread<Element: Sendable>: Sendable {
  /// How long the writer waits after a wake-up before it takes the batch.
  static var lingerMicroseconds: UInt32 { 2000 }
  /// The largest batch whose storage is kept for reuse.
  static var keptCapacity: Int { 1 << 16 }

  private let capacity: Int?
  private let name: String
  private let write: @Sendable (Deque<Element>) -> Void
  private let finish: @Sendable () -> Void
  // Guarded by its own lock: the queue and the writer's bookkeeping.
  private let state = GuardedState(State())
  private let wake = DispatchSemaphore(value: 0)
  // Entered at start, left when the writer thread has written everything and finished; a
  // group (not a semaphore) so that every close() can wait on it, not only the first.
  private let finished = DispatchGroup()

  private struct State {
    var items = Deque<Element>()
    var writerWaiting = false
    var closing = false
    var started = false
    var enqueued: UInt64 = 0
    var written: UInt64 = 0
    // Control elements in `items`, and control elements queued and handled in all.
    var controls = 0
    var controlsEnqueued: UInt64 = 0
    var controlsHandled: UInt64 = 0
    // The writer thread has taken its last batch (or close() finished a writer that never
    // started): nothing queued from now on would be handled.
    var exited = false
    var dropped: UInt64 = 0
    var highWater = 0
    var done = false
  }

  /// - Parameters:
  ///   - name: the writer thread's name.
  ///   - capacity: the most elements the queue holds; `nil` for no bound.
  ///   - write: called on the writer thread with each batch, in order (the batch's storage
  ///     is reused once the call returns).
  ///   - finish: called on the writer thread once, after the last batch of a close.
  package init(
    name: String, capacity: Int?, write: @escaping @Sendable (Deque<Element>) -> Void,
    finish: @escaping @Sendable () -> Void = {}
  ) {
    self.name = name
    self.capacity = capacity
    self.write = write
    self.finish = finish
  }

  /// Starts the writer thread (once).
  package func start() {
    let first = state.withLock { state -> Bool in
      defer { state.started = true }
      return !state.started
    }
    guard first else { return }
    finished.enter()
    let thread = Thread { [self] in self.drain() }
    thread.name = name
    thread.start()
  }

  /// Queues `element`; returns `false` when the queue is full or closed (the element is
  /// dropped and counted). Never blocks beyond a short lock.
  @discardableResult
  package func enqueue(_ element: Element) -> Bool {
    let (accepted, wakeWriter) = state.withLock { state -> (Bool, Bool) in
      if state.closing { return (false, false) }
      if let capacity, state.items.count - state.controls >= capacity {
        state.dropped += 1
        return (false, false)
      }
      state.items.append(element)
      state.enqueued += 1
      state.highWater = Swift.max(state.highWater, state.items.count - state.controls)
      guard state.writerWaiting else { return (true, false) }
      state.writerWaiting = false
      return (true, true)
    }
    if wakeWriter { wake.signal() }
    return accepted
  }

  /// Queues `element`, a piece of the sink's own bookkeeping, after everything queued so far:
  /// past the capacity and while closing too, and not counted as a record (``pending``,
  /// ``highWater`` and ``dropped`` leave it out). Returns `false` only once the writer thread
  /// has taken its last batch: nothing is queued then, and no element is still waiting to be
  /// written, so the caller can do the bookkeeping itself.
  package func enqueueControl(_ element: Element) -> Bool {
    let (accepted, wakeWriter) = state.withLock { state -> (Bool, Bool) in
      if state.exited { return (false, false) }
      state.items.append(element)
      state.controls += 1
      state.controlsEnqueued += 1
      guard state.writerWaiting else { return (true, false) }
      state.writerWaiting = false
      return (true, true)
    }
    if wakeWriter { wake.signal() }
    return accepted
  }

  /// Elements dropped because the queue was full.
  package var dropped: UInt64 { state.withLock { $0.dropped } }

  /// The most elements the queue ever held at once.
  package var highWater: Int { state.withLock { $0.highWater } }

  /// Elements accepted into the queue so far (control elements left out).
  package var accepted: UInt64 { state.withLock { $0.enqueued } }

  /// Elements queued and not yet written (still queued, or in the batch being written).
  package var pending: UInt64 { state.withLock { $0.enqueued - $0.written } }

  /// Whether the writer thread has finished (after a close, with everything written).
  package var isFinished: Bool { state.withLock { $0.done } }

  /// Waits until every element queued before the call (control elements too) has been
  /// written, or `timeout` passes; returns whether it got there.
  @discardableResult
  package func flush(timeout: Duration = .seconds(10)) -> Bool {
    let target = state.withLock { $0.enqueued + $0.controlsEnqueued }
    let deadline = ContinuousClock.now + timeout
    while state.withLock({ $0.written + $0.controlsHandled }) < target {
      if ContinuousClock.now >= deadline { return false }
      usleep(500)
    }
    return true
  }

  /// Stops taking elements, lets the writer write what is queued, and waits up to
  /// `timeout` for it to finish; returns whether it finished. When it did not, the writer
  /// goes on writing (nothing queued is thrown away) and finishes on its own; a later
  /// `close` waits for it again.
  @discardableResult
  package func close(timeout: Duration = .seconds(10)) -> Bool {
    let (wasStarted, wakeWriter) = state.withLock { state -> (Bool, Bool) in
      let waiting = state.writerWaiting
      state.closing = true
      state.writerWaiting = false
      if !state.started { state.exited = true }
      return (state.started, waiting)
    }
    guard wasStarted else {
      finish()
      return true
    }
    if wakeWriter { wake.signal() }
    let (seconds, attoseconds) = timeout.components
    let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    return finished.wait(timeout: .now() + .nanoseconds(max(0, nanoseconds))) == .success
  }

  private func drain() {
    // Two buffers change hands: the writer takes the producers' queue and leaves them the
    // one it emptied, whose capacity stays allocated. A fresh queue per batch made every
    // batch grow one from nothing on the loop thread (reallocations, and page faults for the
    // larger ones: runloop-bench, tracing).
    var batch = Deque<Element>()
    var controls = 0
    while true {
      let done = state.withLock { state -> Bool? in
        if state.items.isEmpty {
          if state.closing {
            state.exited = true
            return true
          }
          state.writerWaiting = true
          return nil
        }
        // O(1) under the lock the producers take: the backlog's storage changes hands,
        // and the producers get the emptied storage of the last batch.
        swap(&batch, &state.items)
        controls = state.controls
        state.controls = 0
        return false
      }
      guard let done else {
        wake.wait()
        // Linger before draining: records that arrive meanwhile join one batch, and their
        // producers find the writer busy and post no semaphore. Waking the writer for each
        // record cost the traced loop a futex wake-up per record (runloop-bench, tracing).
        usleep(Self.lingerMicroseconds)
        continue
      }
      if done { break }
      let count = batch.count
      write(batch)
      state.withLock {
        $0.written += UInt64(count - controls)
        $0.controlsHandled += UInt64(controls)
      }
      // Keep the storage for the producers' next turn, unless a backlog made it large: then
      // give the memory back.
      if count <= Self.keptCapacity {
        batch.removeAll(keepingCapacity: true)
      } else {
        batch = Deque()
      }
    }
    finish()
    state.withLock { $0.done = true }
    finished.leave()
  }
}
