import Glibc
import RunLoopCore
import Synchronization

/// A port-based (version 1) input source for any file descriptor: readable, writable and
/// error call-outs, run on the thread of the loop it is added to, in the modes it is added in.
///
/// It is built on Core's ``/RunLoopCore/DescriptorWatch``: the loop's `epoll` set waits on the
/// descriptor; when the loop runs a mode the source is not in, a ready descriptor is held
/// without spinning and handled when one of its modes runs.
///
/// Ownership is explicit (``DescriptorOwnership``): an `.owned` descriptor is closed by
/// ``invalidate()``, exactly once; a `.borrowed` one is left to the caller, who closes it
/// after invalidating the source (closing first would let `epoll` watch a reused number).
///
/// ```swift
/// let source = DescriptorSource(
///   fileDescriptor: pipeReadEnd, ownership: .owned, name: "pipe",
///   onReadable: { source in
///     var buffer = [UInt8](repeating: 0, count: 512)
///     let count = read(source.fileDescriptor, &buffer, buffer.count)
///     if count == 0 { source.invalidate() }  // the writer closed its end
///   })
/// try source.add(to: .current, mode: .default)
/// ```
///
/// A hang-up goes to `onReadable` (a read returns end of file) and, with errors, to
/// `onError`. A source without `onError` invalidates itself on an error, or on a hang-up with
/// no data left, that its call-outs did not deal with, so that a dead descriptor never
/// makes the loop spin. A source lives (the loops it is in keep it) until it is
/// invalidated. All methods are safe from any thread, with one caution: invalidate an
/// `.owned` source from another thread only when none of its call-outs can be using the
/// descriptor at that moment (invalidating from a call-out is always safe).
public final class DescriptorSource: @unchecked Sendable {
  // Unchecked: each `var` below says why it needs no lock (set once in init, before the
  // object is shared, or touched on one thread only); the rest is locked or atomic.
  /// The descriptor watched.
  ///
  /// ```swift
  /// var byte: UInt8 = 0
  /// _ = read(source.fileDescriptor, &byte, 1)
  /// ```
  public let fileDescriptor: Int32
  /// Who closes ``fileDescriptor``.
  ///
  /// ```swift
  /// if source.ownership == .borrowed { source.invalidate(); close(fd) }
  /// ```
  public let ownership: DescriptorOwnership
  /// The source's name in traces.
  ///
  /// ```swift
  /// print(source.name)  // "pipe"
  /// ```
  public let name: String

  // The call-outs, dropped on invalidation: they often capture an object that holds this
  // source (a socket, a server), and keeping them would keep that object alive forever.
  private let callouts: GuardedState<DescriptorCallouts?>
  private let closed = Atomic<Bool>(false)
  // The watch's handler holds the source through this link until invalidation cuts it.
  private let link = OwnerLink<DescriptorSource>()
  // Set once in init.
  private var watch: DescriptorWatch!

  /// Creates a source; it does nothing until added to a loop.
  ///
  /// - Parameters:
  ///   - fileDescriptor: the descriptor (a pipe, socket, eventfd, timerfd, tty...; not a
  ///     regular file, which `epoll` refuses).
  ///   - ownership: whether ``invalidate()`` closes the descriptor.
  ///   - name: how traces name the source's call-outs.
  ///   - order: among ready sources, lower orders are handled first.
  ///   - wantsWritable: whether to wait for writability from the start (see
  ///     ``setWantsWritable(_:)``).
  ///   - onReadable: called when data can be read (or a read would return end of file).
  ///   - onWritable: called when data can be written, while writability is asked for.
  ///   - onError: called with `.error` and/or `.hangup` when the descriptor reports them.
  ///
  /// ```swift
  /// let source = DescriptorSource(fileDescriptor: fd, onReadable: { _ in drain(fd) })
  /// ```
  public init(
    fileDescriptor: Int32, ownership: DescriptorOwnership = .borrowed,
    name: String = "descriptor", order: Int = 0, wantsWritable: Bool = false,
    onReadable: (@Sendable (DescriptorSource) -> Void)? = nil,
    onWritable: (@Sendable (DescriptorSource) -> Void)? = nil,
    onError: (@Sendable (DescriptorSource, DescriptorEvents) -> Void)? = nil
  ) {
    self.fileDescriptor = fileDescriptor
    self.ownership = ownership
    self.name = name
    self.callouts = GuardedState(
      DescriptorCallouts(onReadable: onReadable, onWritable: onWritable, onError: onError))
    var interest: DescriptorEvents = []
    if onReadable != nil { interest.insert(.readable) }
    if wantsWritable { interest.insert(.writable) }
    self.watch = DescriptorWatch(
      fileDescriptor: fileDescriptor, interest: interest, name: name, order: order
    ) { [link] events in link.target?.dispatch(events) }
    link.attach(self)
  }

  /// Whether the source can still be added and still calls out.
  ///
  /// ```swift
  /// if !source.isValid { print("closed") }
  /// ```
  public var isValid: Bool { watch.isValid }

  /// Whether the source currently waits for writability.
  ///
  /// ```swift
  /// if output.isEmpty && source.wantsWritable { try source.setWantsWritable(false) }
  /// ```
  public var wantsWritable: Bool { watch.interest.contains(.writable) }

  /// Adds the source to `loop` in `mode` (``/RunLoopCore/LoopMode/common`` for every common mode).
  ///
  /// ```swift
  /// try source.add(to: workerLoop, mode: .common)
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidated`` after ``invalidate()``;
  ///   ``/RunLoopCore/RunLoopError/Code/alreadyInUse`` when another source on `loop` watches the
  ///   same descriptor; ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when `epoll` refuses
  ///   the descriptor (closed, or a regular file).
  public func add(to loop: EventRunLoop, mode: LoopMode) throws(RunLoopError) {
    try loop.add(watch, mode: mode)
  }

  /// Removes the source from `mode` of `loop`; it stays valid and can be added again.
  ///
  /// ```swift
  /// source.remove(from: loop, mode: .default)
  /// ```
  public func remove(from loop: EventRunLoop, mode: LoopMode) {
    loop.remove(watch, mode: mode)
  }

  /// Whether `loop` runs the source in `mode`.
  ///
  /// ```swift
  /// if source.isScheduled(on: loop, mode: .default) { print("watched") }
  /// ```
  public func isScheduled(on loop: EventRunLoop, mode: LoopMode) -> Bool {
    loop.contains(watch, mode: mode)
  }

  /// Asks for (or stops asking for) writable call-outs. Ask only while there is output
  /// queued: a socket is writable almost always, and a level-triggered loop would call out
  /// on every pass.
  ///
  /// ```swift
  /// try source.setWantsWritable(true)  // output queued
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidated`` after ``invalidate()``.
  public func setWantsWritable(_ wants: Bool) throws(RunLoopError) {
    var interest = watch.interest
    if wants { interest.insert(.writable) } else { interest.remove(.writable) }
    try watch.setInterest(interest)
  }

  /// Removes the source from every loop and mode and, when it owns the descriptor, closes
  /// it. Safe to call from a call-out of this source; a second call does nothing.
  ///
  /// ```swift
  /// source.invalidate()
  /// ```
  public func invalidate() {
    watch.invalidate()
    link.cut()
    callouts.withLock { $0 = nil }
    guard ownership == .owned, !closed.exchange(true, ordering: .acquiringAndReleasing) else {
      return
    }
    close(fileDescriptor)
  }

  /// Turns read interest off (an accept that failed for lack of descriptors would otherwise
  /// report the listener readable on every pass) or back on.
  func _setWantsReadable(_ wants: Bool) throws(RunLoopError) {
    var interest = watch.interest
    if wants { interest.insert(.readable) } else { interest.remove(.readable) }
    try watch.setInterest(interest)
  }

  private func dispatch(_ events: DescriptorEvents) {
    guard let callouts = callouts.withLock({ $0 }) else { return }
    let onReadable = callouts.onReadable
    let onWritable = callouts.onWritable
    let onError = callouts.onError
    // A hang-up is also an end of file for a reader: let it read the 0.
    if !events.isDisjoint(with: [.readable, .hangup]), let onReadable, isValid {
      onReadable(self)
    }
    if events.contains(.writable), let onWritable, isValid { onWritable(self) }
    let failure = events.intersection([.error, .hangup])
    guard !failure.isEmpty, isValid else { return }
    if let onError {
      onError(self, failure)
    } else if !events.contains(.readable) || failure.contains(.error) {
      // Nobody handles it, no data is left, and it would be reported on every pass.
      invalidate()
    }
  }
}

/// The call-outs of a ``DescriptorSource``.
struct DescriptorCallouts {
  let onReadable: (@Sendable (DescriptorSource) -> Void)?
  let onWritable: (@Sendable (DescriptorSource) -> Void)?
  let onError: (@Sendable (DescriptorSource, DescriptorEvents) -> Void)?
}
