/// What a loop's polling before sleep has done so far: how often it polled, how often that
/// caught work before the loop had to block, and how much time it spent polling.
///
/// A loop polls for a short while before it blocks in step 7 only when its recent sleeps
/// were short (see ``EventRunLoop/spinLimit``); these counts show whether that happened and
/// what it cost.
///
/// ```swift
/// let spins = loop.spinStatistics
/// print("\(spins.caught) of \(spins.spins) spins caught work, \(spins.spinTime) spent")
/// ```
public struct LoopSpinStatistics: Sendable, Hashable {
  /// How many sleeps began by polling.
  ///
  /// ```swift
  /// if loop.spinStatistics.spins == 0 { print("this loop never polled before sleeping") }
  /// ```
  public var spins: UInt64
  /// How many of those polls found an event, so that the loop did not block at all.
  ///
  /// ```swift
  /// let spins = loop.spinStatistics
  /// let hitRate = spins.spins == 0 ? 0 : Double(spins.caught) / Double(spins.spins)
  /// ```
  public var caught: UInt64
  /// The time spent polling, over all spins.
  ///
  /// ```swift
  /// print("polled for \(loop.spinStatistics.spinTime)")
  /// ```
  public var spinTime: Duration

  /// Creates statistics (the loop does this; tests may too).
  ///
  /// ```swift
  /// let none = LoopSpinStatistics(spins: 0, caught: 0, spinTime: .zero)
  /// ```
  package init(spins: UInt64, caught: UInt64, spinTime: Duration) {
    self.spins = spins
    self.caught = caught
    self.spinTime = spinTime
  }
}
