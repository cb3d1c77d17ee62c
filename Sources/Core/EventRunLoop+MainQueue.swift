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
    let watch = DescriptorWatch(
      fileDescriptor: descriptor, name: "DispatchQueue.main", order: Int.min,
      calloutKind: .mainQueue
    ) { _ in
      var count: UInt64 = 0
      _ = withUnsafeMutableBytes(of: &count) { read(descriptor, $0.baseAddress, 8) }
      dispatchMainQueueCallback(nil)
    }
    do {
      try add(watch, mode: .common)
    } catch {
      writeStandardError("RunLoopCore: cannot watch the main dispatch queue: \(error)")
    }
  }
}
