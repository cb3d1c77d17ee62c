import CRunLoopLinux
import Glibc
import RunLoopCore
import Synchronization

/// Process signals (SIGTERM, SIGINT, SIGHUP...) as a port-based input source: a handler that
/// writes each signal to a pipe the loop waits on, and a call-out on the loop's thread like
/// any other.
///
/// This is the safe way to react to a signal on a run loop. The guide warns that a signal
/// handler may only do async-signal-safe things; the source's handler (installed with
/// `sigaction` when the first source for a signal is made) only writes the signal's number
/// and sender to a pipe, libuv's approach, and your handler runs later on the loop's thread,
/// where it may do anything.
///
/// **It works whatever the threads' masks.** The kernel delivers a process-directed signal to
/// any thread that does not block it; there the source's handler runs. A signal that every
/// thread blocks (``block(_:)``, or a mask inherited from a parent) stays pending, and the
/// source reads it from a `signalfd` instead. Either way the signal reaches every source made
/// for it, and the process is never killed by it while a source for it exists. A program
/// does not need to block anything first, which an `async` program, whose threads exist
/// before its first line runs, could not do anyway.
///
/// ```swift
/// let signals = try SignalSource(signals: [SIGTERM, SIGINT, SIGHUP]) { received in
///   if received.signal == SIGHUP { reloadConfiguration() } else { EventRunLoop.main.stop() }
/// }
/// try signals.add(to: .main, mode: .common)
/// try EventRunLoop.main.run()
/// ```
///
/// Several signals that arrive before the loop wakes are all delivered, one call each, in the
/// order they were caught. Standard signals do not queue: two SIGHUPs sent before one is
/// caught may arrive as one.
///
/// **Other handlers.** The first source for a signal keeps the disposition it replaces; its
/// handler calls a previous handler function after writing the signal down, and the last
/// source's ``invalidate()`` puts that disposition back (unless another handler replaced the
/// source's in the meantime, which then stays). A signal is taken once, so two receivers of
/// the same signal that do not chain race for it: libdispatch's signal sources, which
/// swift-service-lifecycle's `ServiceGroup` makes for its graceful-shutdown signals, install
/// a handler that calls no other and read a `signalfd` of their own. Give each signal one
/// receiver: let the group own SIGTERM and SIGINT and use sources for the others (SIGHUP,
/// SIGUSR1), or use a source for SIGTERM and call the group's `triggerGracefulShutdown()`.
///
/// The source owns its pipe and its `signalfd` and closes them on ``invalidate()``.
public final class SignalSource: Sendable {
  /// The signals the source reads.
  ///
  /// ```swift
  /// print(source.signals)  // [15, 2]
  /// ```
  public let signals: [Int32]
  /// The source's name in traces.
  ///
  /// ```swift
  /// print(source.name)  // "signals"
  /// ```
  public let name: String

  // The pipe the handler writes to; its read end is what the handler's call-outs read.
  private let caught: DescriptorSource
  private let writeEnd: Int32
  // Signals that every thread blocked, read here and forwarded to every source's pipe.
  private let pending: DescriptorSource
  private let detached = Atomic<Bool>(false)

  /// Blocks `signals` in the calling thread (and so in every thread it creates from now on).
  ///
  /// A source does not need it: it receives its signals whatever the masks. Blocked signals
  /// reach a source through its `signalfd` instead of its handler; block a signal only to
  /// keep it pending for some other reader.
  ///
  /// ```swift
  /// try SignalSource.block([SIGTERM, SIGINT])
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for a number that is not a
  ///   signal, or SIGKILL / SIGSTOP, which cannot be blocked.
  public static func block(_ signals: [Int32]) throws(RunLoopError) {
    var set = try makeSet(signals)
    let status = pthread_sigmask(SIG_BLOCK, &set, nil)
    guard status == 0 else { throw .systemCall("pthread_sigmask", errno: status) }
  }

  /// Creates a source for `signals` and installs its handler for them.
  ///
  /// From this call on, until ``invalidate()``, the signals no longer have their default
  /// action (SIGTERM no longer ends the process): they are written down for the source, and
  /// its handler is called with each once the source is on a running loop.
  ///
  /// - Parameters:
  ///   - signals: the signal numbers; at least one.
  ///   - name: how traces name the call-outs.
  ///   - blockInCallingThread: block the signals in the calling thread first; not needed for
  ///     delivery (see the type's discussion).
  ///   - handler: called on the loop's thread with each signal read.
  ///
  /// ```swift
  /// let source = try SignalSource(signals: [SIGHUP]) { _ in reload() }
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for an empty list or a number
  ///   that is not a blockable signal; ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when
  ///   `pipe2`, `signalfd` or `sigaction` fails, or when a signal already has 64 sources.
  public init(
    signals: [Int32], name: String = "signals", blockInCallingThread: Bool = false,
    handler: @escaping @Sendable (ReceivedSignal) -> Void
  ) throws(RunLoopError) {
    guard !signals.isEmpty else { throw .invalidArgument("a signal source needs a signal") }
    var set = try Self.makeSet(signals)
    if blockInCallingThread {
      let status = pthread_sigmask(SIG_BLOCK, &set, nil)
      guard status == 0 else { throw .systemCall("pthread_sigmask", errno: status) }
    }
    var ends: [Int32] = [-1, -1]
    guard crl_nonblocking_pipe(&ends) == 0 else { throw .systemCall("pipe2", errno: errno) }
    let descriptor = signalfd(-1, &set, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
    guard descriptor >= 0 else {
      let code = errno
      close(ends[0])
      close(ends[1])
      throw .systemCall("signalfd", errno: code)
    }
    var attached: [Int32] = []
    for number in Set(signals) {
      guard crl_signal_attach(number, ends[1]) == 0 else {
        let code = errno
        for done in attached { crl_signal_detach(done, ends[1]) }
        for end in ends + [descriptor] { close(end) }
        throw .systemCall("sigaction(\(number))", errno: code)
      }
      attached.append(number)
    }
    self.signals = signals
    self.name = name
    self.writeEnd = ends[1]
    self.caught = DescriptorSource(
      fileDescriptor: ends[0], ownership: .owned, name: name,
      onReadable: { source in Self.drainCaught(source, into: handler) })
    self.pending = DescriptorSource(
      fileDescriptor: descriptor, ownership: .owned, name: name,
      onReadable: { [writeEnd = ends[1]] source in
        Self.drainPending(source, into: handler, except: writeEnd)
      })
  }

  /// Whether the source can still be added.
  ///
  /// ```swift
  /// if source.isValid { source.invalidate() }
  /// ```
  public var isValid: Bool { caught.isValid }

  /// Adds the source to `loop` in `mode`.
  ///
  /// ```swift
  /// try signals.add(to: .main, mode: .common)
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidated`` after ``invalidate()``.
  public func add(to loop: EventRunLoop, mode: LoopMode) throws(RunLoopError) {
    try caught.add(to: loop, mode: mode)
    do {
      try pending.add(to: loop, mode: mode)
    } catch {
      caught.remove(from: loop, mode: mode)
      throw error
    }
  }

  /// Removes the source from `mode` of `loop`. Its handler stays installed: signals that
  /// arrive meanwhile wait in its pipe for the next loop it is added to.
  ///
  /// ```swift
  /// signals.remove(from: .main, mode: .common)
  /// ```
  public func remove(from loop: EventRunLoop, mode: LoopMode) {
    caught.remove(from: loop, mode: mode)
    pending.remove(from: loop, mode: mode)
  }

  /// Removes the source everywhere, detaches it from its signals' handler (the last source
  /// of a signal puts back the disposition the first one replaced) and closes its pipe and
  /// `signalfd`. Safe to call from the source's handler; a second call does nothing.
  ///
  /// ```swift
  /// signals.invalidate()
  /// ```
  public func invalidate() {
    if !detached.exchange(true, ordering: .acquiringAndReleasing) {
      for number in Set(signals) { crl_signal_detach(number, writeEnd) }
      close(writeEnd)
    }
    caught.invalidate()
    pending.invalidate()
  }

  private static func makeSet(_ signals: [Int32]) throws(RunLoopError) -> sigset_t {
    var set = sigset_t()
    sigemptyset(&set)
    for number in signals {
      guard number != SIGKILL, number != SIGSTOP, sigaddset(&set, number) == 0 else {
        throw .invalidArgument("\(number) is not a signal that can be blocked")
      }
    }
    return set
  }

  /// Reads every record the handler wrote, stopping as soon as a handler invalidates the
  /// source: its pipe is then closed and the number may already name another file.
  private static func drainCaught(
    _ source: DescriptorSource, into handler: @Sendable (ReceivedSignal) -> Void
  ) {
    var record = crl_signal_record()
    let size = MemoryLayout<crl_signal_record>.size
    while source.isValid, read(source.fileDescriptor, &record, size) == size {
      handler(
        ReceivedSignal(
          signal: record.signal, senderPID: record.sender_pid, senderUID: record.sender_uid))
    }
  }

  /// Reads the blocked signals the `signalfd` holds, hands each to the other sources of that
  /// signal through their pipes (a signal reaches all its sources whichever path it took)
  /// and to `handler`; stops as the other drain does when the source is invalidated.
  private static func drainPending(
    _ source: DescriptorSource, into handler: @Sendable (ReceivedSignal) -> Void,
    except writeEnd: Int32
  ) {
    var info = signalfd_siginfo()
    let size = MemoryLayout<signalfd_siginfo>.size
    while source.isValid, read(source.fileDescriptor, &info, size) == size {
      let received = ReceivedSignal(
        signal: Int32(bitPattern: info.ssi_signo), senderPID: pid_t(bitPattern: info.ssi_pid),
        senderUID: info.ssi_uid)
      crl_signal_forward(received.signal, received.senderPID, received.senderUID, writeEnd)
      handler(received)
    }
  }
}
