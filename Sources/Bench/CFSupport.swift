import CoreFoundation
import Foundation

/// CFRunLoop's default mode, as the CFTypeRef that CFRunLoopPerformBlock takes.
var cfDefaultMode: CFRunLoopMode { kCFRunLoopDefaultMode }

/// A CF object handed between threads (CF's run-loop calls are thread-safe where we use them).
struct CFHandle<Object>: @unchecked Sendable {
  let object: Object
}

/// The closure a CF source or timer calls, kept alive by the context's `info` pointer.
final class CFCallback {
  let body: () -> Void
  init(_ body: @escaping () -> Void) { self.body = body }
}

/// A version-0 CFRunLoopSource whose perform callback runs `perform`.
func makeCFSource(order: Int = 0, _ perform: @escaping () -> Void) -> CFRunLoopSource {
  // CF calls back with the context's `info` pointer: one retained `CFCallback`, kept for
  // the source's life (a bench makes a handful), borrowed unretained at each call.
  let callback = Unmanaged.passRetained(CFCallback(perform)).toOpaque()
  var context = CFRunLoopSourceContext()
  context.version = 0
  context.info = callback
  context.perform = { info in
    Unmanaged<CFCallback>.fromOpaque(info!).takeUnretainedValue().body()
  }
  return CFRunLoopSourceCreate(nil, order, &context)
}

/// A CFRunLoopTimer calling `fire` (nil: a timer whose call-out does nothing).
func makeCFTimer(
  fireDate: CFAbsoluteTime, interval: CFTimeInterval, _ fire: (() -> Void)? = nil
) -> CFRunLoopTimer {
  guard let fire else {
    return CFRunLoopTimerCreate(nil, fireDate, interval, 0, 0, { _, _ in }, nil)
  }
  // As for sources: one retained callback behind `info`, borrowed at each fire.
  let callback = Unmanaged.passRetained(CFCallback(fire)).toOpaque()
  var context = CFRunLoopTimerContext()
  context.info = callback
  return CFRunLoopTimerCreate(
    nil, fireDate, interval, 0, 0,
    { _, info in Unmanaged<CFCallback>.fromOpaque(info!).takeUnretainedValue().body() },
    &context)
}

/// A CFRunLoopObserver counting activities into `counts` (indexed by the activity's bit).
final class CFActivityCounter: @unchecked Sendable {
  // Unchecked: `counts` is written by the observer on the CF loop's thread and read by the
  // bench after that loop stopped. The observer's `info` is `self`, unretained: the counter
  // outlives the observer, which the bench invalidates first.
  var counts = [Int](repeating: 0, count: 8)
  var observer: CFRunLoopObserver!

  init(activities: CFOptionFlags = CFRunLoopActivity.allActivities.rawValue) {
    let me = Unmanaged.passUnretained(self).toOpaque()
    var context = CFRunLoopObserverContext()
    context.info = me
    observer = CFRunLoopObserverCreate(
      nil, activities, true, 0,
      { _, activity, info in
        let counter = Unmanaged<CFActivityCounter>.fromOpaque(info!).takeUnretainedValue()
        let bit = activity.rawValue.trailingZeroBitCount
        if bit < 8 { counter.counts[bit] += 1 }
      }, &context)
  }

  func count(_ activity: CFRunLoopActivity) -> Int {
    counts[Int(activity.rawValue.trailingZeroBitCount)]
  }
}

/// Starts a Foundation thread that runs a CFRunLoop (kept alive by a source) until stopped.
final class CFLoopThread: @unchecked Sendable {
  // Unchecked: `runLoop` is set on the new thread before `ready` is signalled, and read only
  // after `init` waited for that.
  private(set) var runLoop: CFRunLoop!
  private let ready = Latch()
  private let finished = Latch()
  let keepAlive = makeCFSource {}

  init(name: String, setUp: @escaping (CFRunLoop) -> Void = { _ in }) {
    let setUp = CFHandle(object: setUp)
    let thread = Thread { [self] in
      let loop = CFRunLoopGetCurrent()!
      CFRunLoopAddSource(loop, keepAlive, cfDefaultMode)
      setUp.object(loop)
      runLoop = loop
      ready.signal()
      CFRunLoopRun()
      finished.signal()
    }
    thread.name = name
    thread.start()
    ready.wait()
  }

  /// Stops the loop and waits until its thread left CFRunLoopRun.
  func stop() {
    // CFRunLoopStop only stops a loop that is running; retry until the thread left it.
    repeat {
      CFRunLoopStop(runLoop)
      CFRunLoopWakeUp(runLoop)
    } while !finished.wait(seconds: 0.05)
  }
}
