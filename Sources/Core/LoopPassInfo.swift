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
  ///
  /// ```swift
  /// info.loopID == loop.id  // true
  /// ```
  public let loopID: UInt64
  /// The mode of the innermost run.
  ///
  /// ```swift
  /// if info.mode == .default { defaultPasses += 1 }
  /// ```
  public let mode: LoopMode
  /// The loop's pass counter: it counts every pass of every run of this loop, from 1; at
  /// `entry` it still holds the number of the last pass before this run.
  ///
  /// ```swift
  /// print("pass \(info.iteration): \(activity)")
  /// ```
  public let iteration: UInt64
  /// How many runs of this loop are active, 1 for an outermost run.
  ///
  /// ```swift
  /// if info.depth > 1 { print("a nested run in", info.mode) }
  /// ```
  public let depth: Int
  /// The step of the guide's sequence of events the innermost run is at (1 to 10, see
  /// ``EventRunLoop/currentStep``): for a call-out, the step that made it.
  ///
  /// ```swift
  /// print("step \(info.step): \(record.name)")  // "step 9: tick" for a timer
  /// ```
  public let step: Int

  /// Creates the information (the loop does this; tests may too).
  ///
  /// ```swift
  /// let info = LoopPassInfo(loopID: loop.id, mode: .default, iteration: 1, depth: 1, step: 9)
  /// ```
  package init(loopID: UInt64, mode: LoopMode, iteration: UInt64, depth: Int, step: Int = 0) {
    self.loopID = loopID
    self.mode = mode
    self.iteration = iteration
    self.depth = depth
    self.step = step
  }
}
