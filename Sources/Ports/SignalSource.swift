import CRunLoopLinux
import Glibc
import RunLoopCore

/// Process signals (SIGTERM, SIGINT, SIGHUP...) as a port-based input source: a `signalfd`
/// the loop waits on, and a handler that runs on the loop's thread like any other call-out.
///
/// This is the safe way to react to a signal on a run loop. The guide warns that a signal
/// handler may only do async-signal-safe things; with `signalfd` there is no signal handler
/// at all: the kernel queues the signal and the loop reads it as data.
///
/// **Block the signals first, in every thread that could receive them.** The kernel delivers
/// a process-directed signal to any thread that does not block it, and only a blocked signal
/// stays pending for the `signalfd`. Threads inherit the mask of the thread that creates
/// them, so call ``block(_:)`` on the main thread at the very start of `main`, before any
/// thread (a ``/RunLoopCore/RunLoopThread``, a Dispatch worker, a Swift concurrency thread) exists.
/// A thread created before that keeps its own mask, and a signal delivered to it gets the
/// default action (SIGTERM ends the process). By default the initializer also blocks the
/// signals in the calling thread, which covers a thread-directed signal (`pthread_kill`) and
/// a single-threaded process.
///
/// ```swift
/// // First thing in main, before any thread starts:
/// try SignalSource.block([SIGTERM, SIGINT, SIGHUP])
/// let signals = try SignalSource(signals: [SIGTERM, SIGINT, SIGHUP]) { received in
///   if received.signal == SIGHUP { reloadConfiguration() } else { EventRunLoop.main.stop() }
/// }
/// try signals.add(to: .main, mode: .common)
/// try EventRunLoop.main.run()
/// ```
///
/// Several signals that arrive before the loop wakes are all delivered, one call each, in the
/// kernel's order. Standard signals do not queue: two SIGHUPs sent before the loop reads them
/// may arrive as one. The source owns its `signalfd` and closes it on ``invalidate()``; it
/// does not unblock the signals.
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

  private let source: DescriptorSource

  /// Blocks `signals` in the calling thread (and so in every thread it creates from now on).
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

  /// Creates a source reading `signals` from a new `signalfd`.
  ///
  /// - Parameters:
  ///   - signals: the signal numbers; at least one.
  ///   - name: how traces name the call-outs.
  ///   - blockInCallingThread: block the signals in the calling thread first (see the type's
  ///     discussion for the other threads).
  ///   - handler: called on the loop's thread with each signal read.
  ///
  /// ```swift
  /// let source = try SignalSource(signals: [SIGHUP]) { _ in reload() }
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidArgument`` for an empty list or a number
  ///   that is not a blockable signal; ``/RunLoopCore/RunLoopError/Code/systemCallFailed`` when
  ///   `signalfd` fails.
  public init(
    signals: [Int32], name: String = "signals", blockInCallingThread: Bool = true,
    handler: @escaping @Sendable (ReceivedSignal) -> Void
  ) throws(RunLoopError) {
    guard !signals.isEmpty else { throw .invalidArgument("a signal source needs a signal") }
    var set = try Self.makeSet(signals)
    if blockInCallingThread {
      let status = pthread_sigmask(SIG_BLOCK, &set, nil)
      guard status == 0 else { throw .systemCall("pthread_sigmask", errno: status) }
    }
    let descriptor = signalfd(-1, &set, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
    guard descriptor >= 0 else { throw .systemCall("signalfd", errno: errno) }
    self.signals = signals
    self.name = name
    self.source = DescriptorSource(
      fileDescriptor: descriptor, ownership: .owned, name: name,
      onReadable: { source in Self.drain(source, into: handler) })
  }

  /// Whether the source can still be added.
  ///
  /// ```swift
  /// if source.isValid { source.invalidate() }
  /// ```
  public var isValid: Bool { source.isValid }

  /// Adds the source to `loop` in `mode`.
  ///
  /// ```swift
  /// try signals.add(to: .main, mode: .common)
  /// ```
  ///
  /// - Throws: ``/RunLoopCore/RunLoopError/Code/invalidated`` after ``invalidate()``.
  public func add(to loop: EventRunLoop, mode: LoopMode) throws(RunLoopError) {
    try source.add(to: loop, mode: mode)
  }

  /// Removes the source from `mode` of `loop`.
  ///
  /// ```swift
  /// signals.remove(from: .main, mode: .common)
  /// ```
  public func remove(from loop: EventRunLoop, mode: LoopMode) {
    source.remove(from: loop, mode: mode)
  }

  /// Removes the source everywhere and closes its `signalfd`. The signals stay blocked;
  /// ones that arrive later stay pending.
  ///
  /// ```swift
  /// signals.invalidate()
  /// ```
  public func invalidate() { source.invalidate() }

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

  /// Reads every pending signal, stopping as soon as a handler invalidates the source: its
  /// `signalfd` is then closed and the number may already name another file.
  private static func drain(
    _ source: DescriptorSource, into handler: @Sendable (ReceivedSignal) -> Void
  ) {
    var info = signalfd_siginfo()
    let size = MemoryLayout<signalfd_siginfo>.size
    while source.isValid, read(source.fileDescriptor, &info, size) == size {
      handler(
        ReceivedSignal(
          signal: Int32(bitPattern: info.ssi_signo), senderPID: pid_t(bitPattern: info.ssi_pid),
          senderUID: info.ssi_uid))
    }
  }
}
