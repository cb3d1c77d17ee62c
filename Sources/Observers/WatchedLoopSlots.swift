import Glibc

/// The ``WatchedLoop`` of each watchdog watching the calling thread's loop, kept by that
/// thread: a notification finds its loop's state here without the watchdog's lock (one
/// thread-specific load and a short scan; a thread is watched by one watchdog or a few).
final class WatchedLoopSlots {
  private struct Entry {
    /// The watchdog's ``StallWatchdog/serial`` (never reused, unlike an address).
    let watchdog: UInt64
    /// The watchdog's ``StallWatchdog/epoch`` when the loop registered.
    let epoch: UInt64
    let watched: WatchedLoop
  }

  private var entries: [Entry] = []

  /// The calling thread's slots, made on first use; released when the thread exits.
  static var current: WatchedLoopSlots {
    if let pointer = pthread_getspecific(watchedLoopKey) {
      // The key holds the one retained reference; reading borrows it.
      return Unmanaged<WatchedLoopSlots>.fromOpaque(pointer).takeUnretainedValue()
    }
    let slots = WatchedLoopSlots()
    pthread_setspecific(watchedLoopKey, Unmanaged.passRetained(slots).toOpaque())
    return slots
  }

  /// The state `watchdog` keeps for `loop` on this thread, when registered in `epoch`.
  func find(watchdog: UInt64, epoch: UInt64, loop: UInt64) -> WatchedLoop? {
    for entry in entries where entry.watchdog == watchdog {
      guard entry.epoch == epoch, entry.watched.loop == loop else { return nil }
      return entry.watched
    }
    return nil
  }

  /// Keeps `watched` as `watchdog`'s state for this thread, replacing an older one. The
  /// oldest entries go past ``limit``, so that watchdogs closed long ago are not kept for the
  /// thread's life; a live one whose entry went registers again at its next notification.
  func keep(_ watched: WatchedLoop, watchdog: UInt64, epoch: UInt64) {
    entries.removeAll { $0.watchdog == watchdog }
    if entries.count >= Self.limit { entries.removeFirst(entries.count - Self.limit + 1) }
    entries.append(Entry(watchdog: watchdog, epoch: epoch, watched: watched))
  }

  /// The most watchdogs a thread keeps the state of.
  static let limit = 8
}

private let watchedLoopKey: pthread_key_t = {
  var key = pthread_key_t()
  let status = pthread_key_create(&key) { pointer in
    guard let pointer else { return }
    // Gives back the reference `current` stored.
    Unmanaged<WatchedLoopSlots>.fromOpaque(pointer).release()
  }
  precondition(status == 0, "pthread_key_create failed: \(status)")
  return key
}()
