/// The scheduling priority of a ``RunLoopThread``, in Linux terms.
///
/// ```swift
/// let background = RunLoopThread(name: "indexer", priority: .nice(10)) { _ in index() }
/// ```
public enum ThreadPriority: Sendable, Hashable {
  /// A nice value for the ordinary time-sharing scheduler, from -20 (most favoured) to 19.
  /// Lowering it below the current value needs `CAP_SYS_NICE`.
  case nice(Int32)
  /// The `SCHED_FIFO` real-time policy with a priority from 1 to 99; needs `CAP_SYS_NICE`.
  case realtimeFIFO(Int32)
  /// The `SCHED_RR` real-time policy with a priority from 1 to 99; needs `CAP_SYS_NICE`.
  case realtimeRoundRobin(Int32)
}
