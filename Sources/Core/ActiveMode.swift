/// The mode a run is in, as every step of its passes and every ``DeadlineSource`` sees it:
/// the mode's name and whether it is one of the loop's common modes, together in one value.
///
/// A run makes it once, as it begins (`runSpecific`). A mode can join the loop's common
/// modes while a run in it is active (``EventRunLoop/addCommonMode(_:)`` from a call-out or
/// another thread); the run then makes it again as its next pass begins, so that what was
/// added in ``LoopMode/common`` takes part from that pass on, as in CFRunLoop, which copies
/// the common items into the mode.
package struct ActiveMode: Sendable, Equatable {
  /// The mode the run is in; never ``LoopMode/common``.
  package let mode: LoopMode
  /// Whether ``mode`` is one of the loop's common modes. Only the run changes it, as a pass
  /// begins (see the type's description).
  package internal(set) var isCommon: Bool

  package init(mode: LoopMode, isCommon: Bool) {
    self.mode = mode
    self.isCommon = isCommon
  }

  /// Whether an item added in `itemMode` takes part in a run in this mode: added to the
  /// mode itself, or to ``LoopMode/common`` while the mode is a common one.
  package func includes(_ itemMode: LoopMode) -> Bool {
    itemMode == mode || (isCommon && itemMode.isCommonModes)
  }
}
