import Synchronization

/// Where the calling thread's run loop is right now, as its ``LoopTracer`` saw it: the
/// tracer's run id, the loop, the mode and nesting depth of the innermost run, the pass, and
/// the call-out the loop is in. Code running inside a call-out reads it to tag what it does
/// with the same values the trace records carry (`run`, `loop`, `mode`, `iteration`, ...),
/// which is how a log line and the loop records around it come to share `RUNLOOP_RUN`.
///
/// The tracer keeps the context only while ``isPublished`` is on (the RunLoopLogging
/// module's metadata provider turns it on); with it off, a traced loop pays one relaxed
/// atomic load per record for it, and ``current`` is `nil`. The context lives in a
/// thread-local slot, written and read by the loop's own thread only, so reading it takes
/// no lock.
///
/// ```swift
/// LoopContext.isPublished = true
/// loop.perform(name: "job") {
///   if let context = LoopContext.current {
///     print(context.run, context.loop, context.mode, context.iteration)
///   }
/// }
/// ```
public struct LoopContext: Sendable, Hashable {
  /// The run id of the tracer that traces the loop (the records' `run`).
  public var run: String
  /// The loop's id (the records' `loop`).
  public var loop: UInt64
  /// The mode of the innermost run.
  public var mode: String
  /// The loop's pass counter as of its latest activity.
  public var iteration: UInt64
  /// How many runs of the loop are active (1 for an outermost run).
  public var depth: Int
  /// The kind of the call-out the loop is in (`block`, `timer`, ...), when the loop reports
  /// call-outs as they begin.
  ///
  /// ```swift
  /// let kind = LoopContext.current?.calloutKind
  /// ```
  public var calloutKind: String?
  /// The name of the call-out the loop is in, when the loop reports call-outs as they begin.
  ///
  /// ```swift
  /// let name = LoopContext.current?.calloutName
  /// ```
  public var calloutName: String?

  /// Creates a context (the tracer does this; tests may too).
  ///
  /// ```swift
  /// let context = LoopContext(run: "r1", loop: 1, mode: "default", iteration: 3, depth: 1)
  /// ```
  package init(
    run: String, loop: UInt64, mode: String, iteration: UInt64, depth: Int,
    calloutKind: String? = nil, calloutName: String? = nil
  ) {
    self.run = run
    self.loop = loop
    self.mode = mode
    self.iteration = iteration
    self.depth = depth
    self.calloutKind = calloutKind
    self.calloutName = calloutName
  }

  /// Whether tracers keep the context of the loops they trace. Off by default; on, each
  /// traced activity and call-out also updates the thread's context (a thread-local look-up
  /// and a few stores).
  ///
  /// ```swift
  /// LoopContext.isPublished = true
  /// ```
  public static var isPublished: Bool {
    get { _loopContextPublished.load(ordering: .relaxed) }
    set { _loopContextPublished.store(newValue, ordering: .relaxed) }
  }

  /// The calling thread's loop context: `nil` outside a traced run, or when ``isPublished``
  /// is off.
  ///
  /// ```swift
  /// let context = LoopContext.current
  /// ```
  public static var current: LoopContext? {
    guard isPublished else { return nil }
    return LoopContextSlot.existing?.context
  }
}

let _loopContextPublished = Atomic<Bool>(false)
