import CRunLoopLinux
import Glibc
import Synchronization

/// A port-based (version 1) source in its barest form: a file descriptor that a run loop
/// waits on in its modes, and a handler the loop calls on its thread when the descriptor is
/// ready. The Ports module builds its sources (descriptors, ports, sockets, signals) on this.
///
/// The loop waits with a level-triggered `epoll` set. A descriptor that becomes ready while
/// the loop runs a mode the watch is not in is set aside (taken out of the `epoll` set, so
/// that it does not wake the loop again and again) and handled when the loop next runs one
/// of its modes.
///
/// The watch never closes the descriptor: its owner does, after removing the watch or
/// invalidating it.
///
/// ```swift
/// let watch = DescriptorWatch(fileDescriptor: pipeReadEnd, name: "pipe") { events in
///   var byte: UInt8 = 0
///   _ = read(pipeReadEnd, &byte, 1)
/// }
/// try loop.add(watch, mode: .default)
/// ```
///
/// All methods are safe to call from any thread.
public final class DescriptorWatch: ModeScheduledItem, Sendable {
  /// The descriptor watched.
  ///
  /// ```swift
  /// watch.invalidate()
  /// close(watch.fileDescriptor)  // the watch never closes it
  /// ```
  public let fileDescriptor: Int32
  /// The watch's name in traces.
  ///
  /// ```swift
  /// let watch = DescriptorWatch(fileDescriptor: fd, name: "client") { _ in }
  /// watch.name  // "client"
  /// ```
  public let name: String
  /// Ready watches run in ascending order when the loop must choose one (ties in the order
  /// they were added).
  ///
  /// ```swift
  /// let control = DescriptorWatch(fileDescriptor: fd, order: -1) { _ in handleControl() }
  /// ```
  public let order: Int

  let token: UInt64
  // The kind traces give the watch's call-outs; `mainQueue` for the dispatch hook; `nil`
  // for a watch whose handler makes its own call-outs (an in-process port: one per message).
  let calloutKind: CalloutKind?
  let handler: @Sendable (DescriptorEvents) -> Void
  private let interestBits: Atomic<UInt32>
  private let valid = Atomic<Bool>(true)
  // Guarded by its own lock: the loops the watch is registered with.
  private let loops = GuardedState<[WeakLoop]>([])

  private struct WeakLoop {
    weak var loop: EventRunLoop?
    let loopID: UInt64
  }

  /// Creates a watch.
  ///
  /// - Parameters:
  ///   - fileDescriptor: the descriptor; it stays owned by the caller.
  ///   - interest: what to wait for; `.error` and `.hangup` are always reported.
  ///   - name: how traces name the watch.
  ///   - order: lower orders are handled first.
  ///   - handler: called on the loop's thread with what the descriptor is ready for.
  ///
  /// ```swift
  /// let watch = DescriptorWatch(fileDescriptor: fd, interest: [.readable, .writable]) { _ in }
  /// ```
  public convenience init(
    fileDescriptor: Int32, interest: DescriptorEvents = .readable, name: String = "descriptor",
    order: Int = 0, handler: @escaping @Sendable (DescriptorEvents) -> Void
  ) {
    self.init(
      fileDescriptor: fileDescriptor, interest: interest, name: name, order: order,
      calloutKind: .port, handler: handler)
  }

  /// The designated initializer; Core's own watches (the main dispatch queue's) pass their
  /// call-out kind, and a watch whose handler calls out itself (through
  /// `EventRunLoop.callOut`, once per piece of work) passes `nil`.
  package init(
    fileDescriptor: Int32, interest: DescriptorEvents = .readable, name: String,
    order: Int, calloutKind: CalloutKind?,
    handler: @escaping @Sendable (DescriptorEvents) -> Void
  ) {
    self.fileDescriptor = fileDescriptor
    self.name = name
    self.order = order
    self.token = descriptorTokenCounter.wrappingAdd(1, ordering: .relaxed).newValue
    self.handler = handler
    self.interestBits = Atomic(interest.rawValue)
    self.calloutKind = calloutKind
  }

  /// What the watch waits for.
  ///
  /// ```swift
  /// if !watch.interest.contains(.writable) { try watch.setInterest([.readable, .writable]) }
  /// ```
  public var interest: DescriptorEvents {
    DescriptorEvents(rawValue: interestBits.load(ordering: .acquiring))
  }

  /// Changes what the watch waits for, in every loop it is added to (for example, ask for
  /// `.writable` only while output is queued).
  ///
  /// ```swift
  /// try watch.setInterest([.readable, .writable])
  /// ```
  ///
  /// - Throws: ``RunLoopError/Code/invalidated`` after ``invalidate()``;
  ///   ``RunLoopError/Code/systemCallFailed`` when `epoll_ctl` refuses.
  public func setInterest(_ events: DescriptorEvents) throws(RunLoopError) {
    guard isValid else { throw .invalidated("descriptor watch '\(name)' was invalidated") }
    interestBits.store(events.rawValue, ordering: .releasing)
    for loop in registeredLoops() {
      try loop.updateInterest(of: self)
    }
  }

  /// Whether the watch can still be added.
  ///
  /// ```swift
  /// watch.invalidate()
  /// watch.isValid  // false
  /// ```
  public var isValid: Bool { valid.load(ordering: .acquiring) }

  /// Removes the watch from every loop and mode. It does not close the descriptor.
  /// Invalidating twice does nothing the second time.
  ///
  /// ```swift
  /// watch.invalidate()
  /// close(fd)
  /// ```
  public func invalidate() {
    guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
    for loop in registeredLoops() {
      loop.removeEverywhere(self)
    }
  }

  func didRegister(with loop: EventRunLoop) {
    loops.withLock { $0.append(WeakLoop(loop: loop, loopID: loop.id)) }
  }

  func didUnregister(from loop: EventRunLoop) {
    loops.withLock { list in list.removeAll { $0.loopID == loop.id } }
  }

  private func registeredLoops() -> [EventRunLoop] {
    loops.withLock { list in list.compactMap(\.loop) }
  }
}

// Hands out the watches' `epoll` tokens; 0 and 1 are the poller's own eventfd and timerfd.
private let descriptorTokenCounter = Atomic<UInt64>(1)
