import Glibc

// libdispatch on Linux exports the two hooks CoreFoundation uses to drain the main queue
// from the main run loop. The handle is an eventfd that libdispatch writes to when work is
// queued; it never resets it, so the drainer reads it before calling the callback.
@_silgen_name("_dispatch_get_main_queue_handle_4CF")
private func dispatchMainQueueHandle() -> Int32

@_silgen_name("_dispatch_main_queue_callback_4CF")
private func dispatchMainQueueCallback(_ message: UnsafeMutableRawPointer?)

/// Draining `DispatchQueue.main`: the main loop, running on the main thread in a common
/// mode, runs main-queue blocks and `@MainActor` jobs, as CFRunLoop does.
extension EventRunLoop {
  /// Registers the main queue's eventfd as a watch in `.common` on first run of the main
  /// loop. Must be called on the main thread.
  func installMainQueueWatchIfNeeded() {
    let needed = state.withLock { state -> Bool in
      guard !state.mainQueueWatchInstalled else { return false }
      state.mainQueueWatchInstalled = true
      return true
    }
    guard needed else { return }
    let descriptor = dispatchMainQueueHandle()
    guard descriptor >= 0 else { return }
    // Unowned: the loop owns the watch (and the main loop lives as long as the process).
    let watch = DescriptorWatch(
      fileDescriptor: descriptor, name: "DispatchQueue.main", order: Int.min,
      calloutKind: .mainQueue
    ) { [unowned self] _ in
      var count: UInt64 = 0
      // Consumes the eventfd's 8-byte counter (read(2) into the integer's storage).
      _ = withUnsafeMutableBytes(of: &count) { read(descriptor, $0.baseAddress, 8) }
      local.mainQueueDrains += 1
      dispatchMainQueueCallback(nil)
      local.mainQueueDrains -= 1
    }
    state.withLock { $0.mainQueueWatchToken = watch.token }
    do {
      try add(watch, mode: .common)
    } catch {
      writeStandardError("RunLoopCore: cannot watch the main dispatch queue: \(error)")
    }
  }

  /// A run nested in main-queue work does not serve the main queue (libdispatch would not
  /// drain it there anyway), as CFRunLoop leaves the queue's port out of such a run's wait
  /// set: the watch is held out of the `epoll` set, so that its readiness neither skips the
  /// sleep nor counts as a handled source. Called at the start of each pass while draining.
  func holdMainQueueWatchWhileDraining() {
    state.withLock { state in
      guard let token = state.mainQueueWatchToken, !state.heldTokens.contains(token),
        let watch = state.watchesByToken[token]
      else { return }
      state.heldTokens.insert(token)
      poller.remove(watch.fileDescriptor)
    }
  }
}
