import CRunLoopLinux
import DequeModule
import Dispatch
import Glibc
import RunLoopCore
import Synchronization

/// A port for messages between threads of one process, the role of `NSMachPort` in the
/// guide's "Configuring an NSMachPort Object": a bounded message queue plus an `eventfd`
/// that the owning run loop waits on, so its handler runs on that loop's thread.
///
/// Any thread may send; a message carries a message id, byte-buffer components and,
/// optionally, the ports to answer on (``LoopPortMessage``).
///
/// ```swift
/// let port = try InProcessPort(name: "main") { message in
///   print("message \(message.msgid) on the main thread")
/// }
/// try port.add(to: .main, mode: .default)
/// // Any thread:
/// try port.send(LoopPortMessage(msgid: 1), before: .now + .seconds(1))
/// ```
///
/// Delivery: per sender, messages arrive in the order they were sent; nothing is lost or
/// duplicated. The loop takes every queued message in one wake-up (one `eventfd` read, one
/// lock) and hands them to the handler one by one; a handler that runs the loop nested
/// continues with those before newer ones, so the order holds then too.
///
/// Back-pressure: the queue holds ``capacity`` messages. A send to a full queue waits for
/// room until its deadline and then throws ``RunLoopCore/RunLoopError/Code/queueFull``; a message
/// is never dropped silently. A send from the owning loop's own thread to its own full queue throws
/// at once, since the loop cannot drain while it waits.
///
/// A port belongs to the first loop it is added to (in any number of modes of it). The
/// loops keep an added port alive until ``invalidate()``, which also closes its `eventfd`;
/// an invalidated port is freed once nothing else refers to it.
///
/// The owning loop's thread exiting invalidates the port (its messages could never be
/// handled): sends then throw ``/RunLoopCore/RunLoopError/Code/loopThreadExited``.
///
/// Invalidation tells both sides: every handler registered with
/// ``onInvalidation(on:_:)`` (the owner's and the senders') runs once, senders waiting for
/// room throw ``/RunLoopCore/RunLoopError/Code/invalidated``, later sends throw it too, and
/// messages still queued are discarded (their number is in ``discardedOnInvalidation``).
public final class InProcessPort: @unchecked Sendable {
  // Unchecked: each `var` below says why it needs no lock (set once in init, before the
  // object is shared, or touched on one thread only); the rest is locked or atomic.
  /// The port's name in traces.
  ///
  /// ```swift
  /// print(port.name)  // "jobs"
  /// ```
  public let name: String
  /// How many messages the queue holds before senders wait.
  ///
  /// ```swift
  /// let room = port.capacity - port.queuedCount
  /// ```
  public let capacity: Int

  // Closed by invalidate() (or deinit) under the state lock, once `state.valid` is false:
  // senders write and the loop reads only under that lock after checking `valid`.
  private let eventDescriptor: Int32
  // Free queue slots. Created at 0 and raised to `capacity`, so libdispatch never sees the
  // value below its initial one (it stops the process when such a semaphore is freed).
  private let slots = DispatchSemaphore(value: 0)
  private let handler: @Sendable (LoopPortMessage) -> Void
  // Everything shared between senders and the owning loop, behind one lock; no user code
  // runs while it is held.
  private let state = GuardedState(PortState())
  // A lock-free copy of `state.valid` for the checks made per message.
  private let validFlag = Atomic<Bool>(true)
  // Messages taken from the queue and not yet handed to the handler. Touched on the owning
  // loop's thread only: a handler that runs the loop nested continues from here, so the
  // messages of one sender keep their order.
  private var taken = Deque<LoopPortMessage>()
  // The watch's handler holds the port through this link until invalidation cuts it.
  private let link = OwnerLink<InProcessPort>()
  // Set once in init.
  private var watch: DescriptorWatch!

  /// Creates a port.
  ///
  /// - Parameters:
  ///   - name: how traces name the port's call-outs.
  ///   - capacity: the queue bound, at least 1.
  ///   - handler: called on the owning loop's thread with each message (the role of the
  ///     delegate's `handlePortMessage:`).
  ///
  /// ```swift
  /// let port = try InProcessPort(name: "jobs", capacity: 256) { message in run(message) }
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for a capacity below 1;
  ///   ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when no `eventfd` can be made.
  public init(
    name: String = "port", capacity: Int = 1024,
    handler: @escaping @Sendable (LoopPortMessage) -> Void
  ) throws(RunLoopError) {
    guard capacity >= 1 else { throw .invalidArgument("a port capacity must be at least 1") }
    let descriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
    guard descriptor >= 0 else { throw .systemCall("eventfd", errno: errno) }
    self.name = name
    self.capacity = capacity
    self.eventDescriptor = descriptor
    self.handler = handler
    for _ in 0..<capacity { slots.signal() }
    // Without a call-out kind: the port calls out once per message, each with its sender.
    self.watch = DescriptorWatch(
      fileDescriptor: descriptor, name: name, order: 0, calloutKind: nil
    ) { [link] _ in
      link.target?.deliverQueued()
    }
    link.attach(self)
  }

  deinit {
    state.withLock { state in
      if !state.closed { close(eventDescriptor) }
    }
  }

  /// Whether the port still accepts messages.
  ///
  /// ```swift
  /// if port.isValid { try port.send(msgid: 1, before: .now) }
  /// ```
  public var isValid: Bool { state.withLock { $0.valid } }

  /// The loop the port belongs to, once added.
  ///
  /// ```swift
  /// assert(port.owningLoop === EventRunLoop.current)
  /// ```
  public var owningLoop: EventRunLoop? { state.withLock { $0.owner } }

  /// Messages queued and not yet taken by the owning loop (the loop takes all queued messages
  /// at once and then hands them to the handler one at a time).
  ///
  /// ```swift
  /// print("\(port.queuedCount) messages waiting")
  /// ```
  public var queuedCount: Int { state.withLock { $0.queue.count } }

  /// Messages discarded because the port was invalidated with them still queued.
  ///
  /// ```swift
  /// port.invalidate()
  /// print("\(port.discardedOnInvalidation) messages were never handled")
  /// ```
  public var discardedOnInvalidation: Int { state.withLock { $0.discarded } }

  /// Adds the port to `loop` in `mode`; the first add makes `loop` its owner.
  ///
  /// ```swift
  /// try port.add(to: .current, mode: .default)
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidated`` after ``invalidate()``;
  ///   ``/RunLoopCore/RunLoopError/Code/alreadyInUse`` when the port belongs to another loop.
  public func add(to loop: EventRunLoop, mode: LoopMode) throws(RunLoopError) {
    let first = try state.withLock { state throws(RunLoopError) -> Bool in
      guard state.valid else { throw gone(state) }
      if let owner = state.owner, owner !== loop {
        throw .alreadyInUse("port '\(name)' belongs to \(owner); it cannot join \(loop)")
      }
      defer { state.owner = loop }
      return state.owner == nil
    }
    if first {
      // The owner's thread exit invalidates the port: its messages could never be handled.
      let token = loop.whenThreadExits { [weak self] in self?.ownerThreadExited() }
      guard let token else {
        ownerThreadExited()
        throw .loopThreadExited("\(loop)'s thread has exited; port '\(name)' cannot join it")
      }
      let keep = state.withLock { state -> Bool in
        guard state.valid else { return false }
        state.exitToken = token
        return true
      }
      if !keep { loop.cancelThreadExitHandler(token) }
    }
    try loop.add(watch, mode: mode)
  }

  /// The owning loop's thread exited: the port is invalidated, and sends (waiting or later)
  /// throw `loopThreadExited`.
  private func ownerThreadExited() {
    state.withLock { state in
      state.ownerExited = true
      state.exitToken = nil
    }
    invalidate()
  }

  /// The error for a send to a port that is no longer valid.
  private func gone(_ state: PortState) -> RunLoopError {
    guard state.ownerExited else { return .invalidated("port '\(name)' was invalidated") }
    return .loopThreadExited("the thread of port '\(name)''s loop exited")
  }

  /// Removes the port from `mode` of its loop; queued messages wait until it is added again.
  ///
  /// ```swift
  /// port.remove(from: .current, mode: .default)
  /// ```
  public func remove(from loop: EventRunLoop, mode: LoopMode) {
    loop.remove(watch, mode: mode)
  }

  /// Queues `message` for the port's handler, waiting for room until `deadline` when the
  /// queue is full. The message's ``LoopPortMessage/sendPort`` is not looked at: the message
  /// goes to this port. Safe from any thread.
  ///
  /// ```swift
  /// try port.send(LoopPortMessage(msgid: 2, components: [[1, 2, 3]]), before: .now + .seconds(1))
  /// ```
  ///
  /// - Throws: ``RunLoopCore/RunLoopError/Code/queueFull`` when the queue is still full at
  ///   `deadline` (or at once from the owning loop's thread);
  ///   ``/RunLoopCore/RunLoopError/Code/invalidated`` when the port is or becomes invalid;
  ///   ``/RunLoopCore/RunLoopError/Code/loopThreadExited`` when the owning loop's thread
  ///   exited.
  public func send(_ message: LoopPortMessage, before deadline: ContinuousClock.Instant)
    throws(RunLoopError)
  {
    guard validFlag.load(ordering: .acquiring) else {
      throw state.withLock { gone($0) }
    }
    if slots.wait(timeout: .now()) != .success {
      try waitForRoom(until: deadline)
    }
    var delivered = message
    delivered.sendPort = message.receivePort
    delivered.receivePort = self
    // Each hop its own: a message sent on again carries no stamp of an earlier send.
    delivered.stamp = CapturedCause.ifTracing()
    let queued = state.withLock { state -> RunLoopError? in
      guard state.valid else { return gone(state) }
      state.queue.append(delivered)
      if !state.notified {
        // Written under the lock: invalidate() closes the eventfd under it too.
        state.notified = true
        var one: UInt64 = 1
        // The only failure a non-blocking eventfd write can have at a count this low is an
        // interruption; a write lost to it would leave the message unannounced.
        while write(eventDescriptor, &one, 8) < 0, errno == EINTR {}
      }
      return nil
    }
    if let refused = queued {
      // Give the slot back: a sender waiting for room may need it to learn of the
      // invalidation (invalidate() released one slot per waiting sender).
      slots.signal()
      throw refused
    }
  }

  /// Builds a message and sends it (the guide's `initWithSendPort:receivePort:components:`
  /// followed by `sendBeforeDate:`).
  ///
  /// ```swift
  /// try mainPort.send(msgid: 100, receivePort: workerPort, before: .now)
  /// ```
  ///
  /// - Throws: what ``send(_:before:)`` throws.
  public func send(
    msgid: PortMessageID, components: [[UInt8]] = [], receivePort: InProcessPort? = nil,
    before deadline: ContinuousClock.Instant
  ) throws(RunLoopError) {
    try send(
      LoopPortMessage(
        msgid: msgid, components: components, sendPort: self, receivePort: receivePort),
      before: deadline)
  }

  /// The same send with a `UInt32` id, as message ids were on this port before they became
  /// ``PortMessageID`` (`Int32`) on every port: its 32 bits are kept (`Int32(bitPattern:)`).
  ///
  /// ```swift
  /// let legacy: UInt32 = 7
  /// try port.send(msgid: PortMessageID(bitPattern: legacy), before: .now)  // instead
  /// ```
  ///
  /// - Throws: what ``send(_:before:)`` throws.
  @available(*, deprecated, message: "message ids are PortMessageID (Int32) on every port")
  @_disfavoredOverload
  public func send(
    msgid: UInt32, components: [[UInt8]] = [], receivePort: InProcessPort? = nil,
    before deadline: ContinuousClock.Instant
  ) throws(RunLoopError) {
    try send(
      msgid: PortMessageID(bitPattern: msgid), components: components, receivePort: receivePort,
      before: deadline)
  }

  /// Registers `handler` to run once when the port is invalidated: on `loop`'s thread (in
  /// its common modes) when one is given, otherwise on the invalidating thread. Both the
  /// owner and the threads that send to the port use this to learn that it is gone. On a
  /// port already invalid, the handler is scheduled at once.
  ///
  /// ```swift
  /// workerPort.onInvalidation(on: .main) { port in print("\(port.name) is gone") }
  /// ```
  public func onInvalidation(
    on loop: EventRunLoop? = nil, _ handler: @escaping @Sendable (InProcessPort) -> Void
  ) {
    let stillValid = state.withLock { state -> Bool in
      guard state.valid else { return false }
      state.invalidationHandlers.append(InvalidationHandler(loop: loop, body: handler))
      return true
    }
    if !stillValid { InvalidationHandler(loop: loop, body: handler).run(for: self) }
  }

  /// Invalidates the port: removes it from its loop, discards queued messages, fails
  /// waiting and later sends, and runs the invalidation handlers. A second call does nothing.
  ///
  /// ```swift
  /// port.invalidate()
  /// ```
  public func invalidate() {
    let taken = state.withLock {
      state -> (Int, [InvalidationHandler], (EventRunLoop, UInt64)?)? in
      guard state.valid else { return nil }
      state.valid = false
      validFlag.store(false, ordering: .releasing)
      state.discarded += state.queue.count
      state.queue.removeAll()
      defer { state.invalidationHandlers.removeAll() }
      let exit = state.owner.flatMap { owner in state.exitToken.take().map { (owner, $0) } }
      return (state.waitingSenders, state.invalidationHandlers, exit)
    }
    guard let (waiting, handlers, exit) = taken else { return }
    if let (owner, token) = exit { owner.cancelThreadExitHandler(token) }
    // Wake every sender waiting for room; each finds the port invalid.
    for _ in 0..<waiting { slots.signal() }
    watch.invalidate()
    link.cut()
    // Out of every epoll set now (closing first could let a reused number be removed), and
    // no sender writes to it any more: they check `valid` under this lock before writing.
    state.withLock { state in
      state.closed = true
      close(eventDescriptor)
    }
    for handler in handlers { handler.run(for: self) }
  }

  private func waitForRoom(until deadline: ContinuousClock.Instant) throws(RunLoopError) {
    let owner = try state.withLock { state throws(RunLoopError) -> EventRunLoop? in
      guard state.valid else { throw gone(state) }
      state.waitingSenders += 1
      return state.owner
    }
    let acquired: Bool
    if owner?.isCurrent == true {
      acquired = false
    } else {
      acquired = slots.wait(timeout: Self.dispatchTime(at: deadline)) == .success
    }
    let refused = state.withLock { state -> RunLoopError? in
      state.waitingSenders -= 1
      return state.valid ? nil : gone(state)
    }
    if let refused {
      // The slot may be the one invalidate() released for another waiting sender.
      if acquired { slots.signal() }
      throw refused
    }
    guard acquired else {
      throw .queueFull(
        "port '\(name)' stayed full (capacity \(capacity)) until the send's deadline"
          + (owner?.isCurrent == true ? "; its own loop's thread cannot wait for room" : ""))
    }
  }

  /// `deadline` on Dispatch's clock, saturated: a deadline centuries away waits forever
  /// instead of overflowing.
  static func dispatchTime(at deadline: ContinuousClock.Instant) -> DispatchTime {
    let remaining = ContinuousClock.now.duration(to: deadline)
    let seconds = remaining.components.seconds
    guard seconds > 0 || remaining.components.attoseconds > 0 else { return .now() }
    // About 292 years of nanoseconds fit in an Int64; more than a century is "forever".
    guard seconds < 3_000_000_000 else { return .distantFuture }
    let nanoseconds =
      seconds * 1_000_000_000 + max(0, remaining.components.attoseconds) / 1_000_000_000
    return DispatchTime.now() + .nanoseconds(Int(nanoseconds))
  }

  /// On the owning loop's thread: take the queued messages (one lock for all of them), free
  /// their slots, and hand them to the handler one at a time from `taken`. A handler that
  /// runs the loop nested comes back here and continues from the same `taken`, so a
  /// sender's messages keep their order.
  ///
  /// One call takes the queue once: messages sent meanwhile wait for the next pass (their
  /// send wrote the eventfd again). Taking the queue again and again while senders kept it
  /// full made the call-out never end under a flood, starving every other source, timer
  /// and signal of the loop (the soak test saw a signal wait more than 10 s).
  private func deliverQueued() {
    var tookQueue = false
    // The loop each message is a call-out of: read with the queue when this call takes it,
    // and on its own when a nested run continues from messages an outer call took.
    var loop: EventRunLoop? = taken.isEmpty ? nil : state.withLock { $0.owner }
    while true {
      if taken.isEmpty {
        guard !tookQueue else { return }
        tookQueue = true
        let refilled = state.withLock { state -> Int? in
          guard state.valid else { return nil }
          var count: UInt64 = 0
          _ = read(eventDescriptor, &count, 8)
          state.notified = false
          swap(&taken, &state.queue)
          loop = state.owner
          return taken.count
        }
        guard let refilled, refilled > 0 else { return }
        for _ in 0..<refilled { slots.signal() }
      }
      // A handler may invalidate the port; what is left is then discarded.
      guard validFlag.load(ordering: .acquiring) else {
        let left = taken.count
        taken.removeAll()
        state.withLock { $0.discarded += left }
        return
      }
      let message = taken.removeFirst()
      // Not reached without a loop: only a port added to one (its owner) is woken to deliver.
      guard let loop else {
        handler(message)
        continue
      }
      loop.callOut(
        .port, name: name, dueAt: message.stamp?.stamp.queuedAt,
        cause: message.stamp?.stamp.cause, contexts: message.stamp?.contexts
      ) { handler(message) }
    }
  }
}

/// The state of an ``InProcessPort`` shared between threads.
struct PortState {
  var valid = true
  var queue = Deque<LoopPortMessage>()
  // Whether the eventfd has been written since the loop last took the queue.
  var notified = false
  var waitingSenders = 0
  var discarded = 0
  // Whether invalidate() closed the eventfd.
  var closed = false
  var owner: EventRunLoop?
  // The owner's thread exited (which invalidated the port): sends throw `loopThreadExited`.
  var ownerExited = false
  // The token of the owner's thread-exit handler, until invalidation.
  var exitToken: UInt64?
  var invalidationHandlers: [InvalidationHandler] = []
}

/// A handler to run when a port is invalidated, and where.
struct InvalidationHandler {
  let loop: EventRunLoop?
  let body: @Sendable (InProcessPort) -> Void

  func run(for port: InProcessPort) {
    if let loop {
      loop.perform(inModes: [.common], name: "\(port.name).invalidated") { body(port) }
    } else {
      body(port)
    }
  }
}
