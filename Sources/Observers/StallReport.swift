/// What a ``StallWatchdog`` found about one loop: a stall (awake past the threshold) or the
/// recovery that ends it (the loop went back to sleep, or left its run).
///
/// A ``StallReporter`` receives it; the `LoopTracer` of RunLoopTracing turns it into a
/// `stall` or `recovery` trace record.
public struct StallReport: Sendable, Equatable {
  /// Whether the loop stalled or recovered.
  public enum Kind: Sendable, Equatable {
    /// Awake past the threshold, reported once per stall.
    case stall
    /// Asleep again (or out of its run) after a reported stall.
    case recovery
  }

  /// A stall or a recovery.
  public var kind: Kind
  /// The loop's `EventRunLoop.id`.
  public var loop: UInt64
  /// The kernel thread id of the loop's thread.
  public var tid: Int32
  /// The mode the loop was running in.
  public var mode: String
  /// The pass the loop was in.
  public var iteration: UInt64
  /// The nesting depth of the run.
  public var depth: Int
  /// When the loop last woke (or began its run): monotonic `CLOCK_BOOTTIME` nanoseconds.
  public var awakeSince: Int64
  /// How long it had been awake when the report was made, in nanoseconds.
  public var awakeFor: Int64
  /// The kind of the innermost call-out in progress, for a stall inside one.
  public var calloutKind: String?
  /// The name of that call-out.
  public var calloutName: String?
  /// The thread's scheduling state as `/proc` shows it (`R`, `S`, `D`...), for a stall.
  public var threadState: String?
  /// The kernel function the thread waits in (`/proc/.../wchan`), for a stall.
  public var wchan: String?

  /// Creates a report; a ``StallWatchdog`` makes them, a test or another reporter may too.
  public init(
    kind: Kind, loop: UInt64, tid: Int32, mode: String, iteration: UInt64, depth: Int,
    awakeSince: Int64, awakeFor: Int64, calloutKind: String? = nil, calloutName: String? = nil,
    threadState: String? = nil, wchan: String? = nil
  ) {
    self.kind = kind
    self.loop = loop
    self.tid = tid
    self.mode = mode
    self.iteration = iteration
    self.depth = depth
    self.awakeSince = awakeSince
    self.awakeFor = awakeFor
    self.calloutKind = calloutKind
    self.calloutName = calloutName
    self.threadState = threadState
    self.wchan = wchan
  }
}
