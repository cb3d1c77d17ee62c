import Glibc
import RunLoopCore

/// One thread's ``LoopContext``: a stack of the loop's active runs, kept by the tracer on the
/// loop thread and read by code on the same thread, so it needs no lock. The stack follows
/// `entry` and `exit`, so that after a nested run returns, the context is the enclosing run's
/// again (its mode, its call-out).
final class LoopContextSlot {
  struct Frame {
    var mode: String
    var calloutKind: String?
    var calloutName: String?
  }

  private var run = ""
  private var loop: UInt64 = 0
  private var iteration: UInt64 = 0
  private var frames: [Frame] = []

  /// The calling thread's slot, if it has one.
  static var existing: LoopContextSlot? {
    guard let pointer = pthread_getspecific(_loopContextKey) else { return nil }
    // The slot holds the one retained reference (see `forCurrentThread`); reading borrows it.
    return Unmanaged<LoopContextSlot>.fromOpaque(pointer).takeUnretainedValue()
  }

  /// The calling thread's slot, made on first use; released when the thread exits.
  static var forCurrentThread: LoopContextSlot {
    if let slot = existing { return slot }
    let slot = LoopContextSlot()
    // One reference, owned by the thread's slot until the key's destructor releases it.
    pthread_setspecific(_loopContextKey, Unmanaged.passRetained(slot).toOpaque())
    return slot
  }

  var context: LoopContext? {
    guard let top = frames.last else { return nil }
    return LoopContext(
      run: run, loop: loop, mode: top.mode, iteration: iteration, depth: frames.count,
      calloutKind: top.calloutKind, calloutName: top.calloutName)
  }

  /// The loop reached `activity`: `entry` opens a run, `exit` closes one, the others update
  /// the innermost run. A tracer attached in the middle of a run finds fewer frames than
  /// the depth, and fills them in.
  func reach(_ activity: LoopActivity, run: String, _ info: LoopPassInfo) {
    self.run = run
    loop = info.loopID
    iteration = info.iteration
    let depth = max(info.depth, 1)
    // `entry` opens a fresh innermost run; the other activities belong to the run there is.
    let enclosing = activity == .entry ? depth - 1 : depth
    if frames.count > enclosing { frames.removeLast(frames.count - enclosing) }
    while frames.count < depth { frames.append(Frame(mode: info.mode.name)) }
    if activity == .exit {
      frames.removeLast()
    } else {
      frames[frames.count - 1].mode = info.mode.name
    }
  }

  /// The loop calls out into user code.
  func beginCallout(kind: String, name: String, run: String, _ info: LoopPassInfo) {
    if frames.isEmpty {
      reach(.afterWaiting, run: run, info)
    }
    frames[frames.count - 1].calloutKind = kind
    frames[frames.count - 1].calloutName = name
  }

  /// The call-out returned.
  func endCallout() {
    guard !frames.isEmpty else { return }
    frames[frames.count - 1].calloutKind = nil
    frames[frames.count - 1].calloutName = nil
  }
}

// Each thread's slot; the destructor releases it when the thread exits.
private let _loopContextKey: pthread_key_t = {
  var key = pthread_key_t()
  let status = pthread_key_create(&key) { pointer in
    guard let pointer else { return }
    // Gives back the reference `forCurrentThread` stored.
    Unmanaged<LoopContextSlot>.fromOpaque(pointer).release()
  }
  precondition(status == 0, "pthread_key_create failed: \(status)")
  return key
}()
