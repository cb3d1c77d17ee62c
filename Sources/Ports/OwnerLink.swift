import RunLoopCore

/// What a `DescriptorWatch`'s handler holds instead of its owner: a strong reference the
/// owner clears when it is invalidated. The loop keeps a scheduled owner alive through it
/// (owner -> watch -> handler -> link -> owner) and invalidation breaks that cycle, so an
/// invalidated port or source is freed once its users drop it. (A `weak` capture would not
/// do: a port added to a loop and otherwise unreferenced must stay alive until invalidated.)
final class OwnerLink<Owner: AnyObject & Sendable>: Sendable {
  private let owner: GuardedState<Owner?>

  init(_ owner: Owner? = nil) { self.owner = GuardedState(owner) }

  /// The owner, or nil once cut.
  var target: Owner? { owner.withLock { $0 } }

  func attach(_ target: Owner) { owner.withLock { $0 = target } }

  func cut() { owner.withLock { $0 = nil } }
}
