/// Where a loop is when it tells an instrument something: which loop, in which mode, in
/// which pass, how deeply nested.
///
/// ```swift
/// func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
///   print(info.loopID, info.mode, activity, info.iteration, info.depth)
/// }
/// ```
public struct LoopPassInfo: Sendable, Hashable {
  /// The loop's ``EventRunLoop/id``.
  public let loopID: UInt64
  /// The mode of the innermost run.
  public let mode: LoopMode
  /// The loop's pass counter: it counts every pass of every run of this loop, from 1; at
  /// `entry` it still holds the number of the last pass before this run.
  public let iteration: UInt64
  /// How many runs of this loop are active, 1 for an outermost run.
  public let depth: Int

  /// Creates the information (the loop does this; tests may too).
  public init(loopID: UInt64, mode: LoopMode, iteration: UInt64, depth: Int) {
    self.loopID = loopID
    self.mode = mode
    self.iteration = iteration
    self.depth = depth
  }
}
