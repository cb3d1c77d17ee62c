/// The name of a run-loop mode: the set of sources, timers and observers a run watches.
///
/// A run loop runs in one mode at a time. Only items added to that mode (directly, or
/// through ``common`` when the mode is one of the loop's common modes) take part in the run;
/// everything else waits, and nothing is lost while it waits.
///
/// ```swift
/// let critical: LoopMode = "critical"
/// try loop.add(source, mode: critical)
/// let result = try loop.run(mode: critical, timeout: .seconds(1))
/// ```
public struct LoopMode: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
  /// The mode's name, as it appears in traces.
  ///
  /// ```swift
  /// LoopMode.default.name  // "default"
  /// ```
  public let name: String

  /// Creates a mode with a name.
  ///
  /// ```swift
  /// let modal = LoopMode("modal")
  /// ```
  public init(_ name: String) {
    self.name = name
  }

  /// Whether this is ``common``. Every run asks: comparing two different names is a call
  /// into the string runtime (about 30 instructions of a zero-timeout run's 900), comparing
  /// their lengths is a load. Not a stored flag: it would make the mode a third word, which
  /// every call that takes a mode would pay for.
  var isCommonModes: Bool { name.utf8.count == "common".utf8.count && name == "common" }

  /// Creates a mode from a string literal: `let mode: LoopMode = "tracking"`.
  ///
  /// ```swift
  /// let tracking: LoopMode = "tracking"
  /// try loop.add(source, mode: tracking)
  /// ```
  public init(stringLiteral value: String) {
    self.init(value)
  }

  // The two built-in modes are computed from a literal, not stored: the name is then a small
  // string the compiler can see, so passing `.default` or `.common` costs no retain and no
  // release. A stored mode costs the caller both on every use (35 of a zero-timeout run's
  // 646 instructions, `callgrind`).

  /// The mode runs use unless told otherwise (CoreFoundation's `kCFRunLoopDefaultMode`).
  ///
  /// It is a member of every loop's common modes from the start.
  ///
  /// ```swift
  /// try loop.add(source, mode: .default)
  /// ```
  public static var `default`: LoopMode { LoopMode("default") }

  /// The pseudo-mode that stands for every one of a loop's common modes
  /// (CoreFoundation's `kCFRunLoopCommonModes`).
  ///
  /// An item added in `.common` is in each mode of the loop's common-modes set, including
  /// modes added to the set later with ``EventRunLoop/addCommonMode(_:)``. A loop never runs
  /// in `.common` itself: running in it is an error.
  ///
  /// ```swift
  /// try loop.add(source, mode: .common)
  /// ```
  public static var common: LoopMode { LoopMode("common") }

  /// The mode's name.
  ///
  /// ```swift
  /// "\(LoopMode.common)"  // "common"
  /// ```
  public var description: String { name }
}
