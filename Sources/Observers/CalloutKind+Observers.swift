import RunLoopCore

extension CalloutKind {
  /// A run-loop observer's call-out (``LoopObserver``).
  ///
  /// ```swift
  /// if record.kind == .observer { print("observer \(record.name) took \(record.duration)") }
  /// ```
  public static let observer = CalloutKind("observer")
}
