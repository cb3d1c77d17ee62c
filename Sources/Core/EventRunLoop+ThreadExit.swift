/// Work that ends with a loop's thread: a suspension tied to a loop (a sleep, a sequence of
/// its source's events, a send to one of its ports, a join) registers here, so that it ends
/// with `loopThreadExited` when the thread exits instead of waiting for ever.
extension EventRunLoop {
  /// Registers `handler` to run once, on the exiting thread, when this loop's thread exits
  /// (after the loop abandoned its queued requests and let go of its sources and timers).
  /// Returns the token that ``cancelThreadExitHandler(_:)`` takes, or `nil` when the thread
  /// has exited already: `handler` is then not kept, and the caller ends its work itself.
  package func whenThreadExits(_ handler: @escaping @Sendable () -> Void) -> UInt64? {
    state.withLock { state -> UInt64? in
      guard !state.threadExited else { return nil }
      state.exitHandlers.nextToken += 1
      state.exitHandlers.handlers[state.exitHandlers.nextToken] = handler
      return state.exitHandlers.nextToken
    }
  }

  /// Forgets the handler of `token` (the work it would end finished first). The handler is
  /// released after the lock: what it captured may run code as it goes.
  package func cancelThreadExitHandler(_ token: UInt64) {
    let handler = state.withLock { $0.exitHandlers.handlers.removeValue(forKey: token) }
    withExtendedLifetime(handler) {}
  }
}

/// The handlers of ``EventRunLoop/whenThreadExits(_:)``, kept in `LoopState` under the
/// loop's lock.
struct ThreadExitHandlers {
  var handlers: [UInt64: @Sendable () -> Void] = [:]
  var nextToken: UInt64 = 0

  /// Takes every handler, in the order they were registered.
  mutating func takeAll() -> [@Sendable () -> Void] {
    defer { handlers.removeAll() }
    return handlers.sorted { $0.key < $1.key }.map(\.value)
  }
}
