import CoreFoundation
import Foundation

/// Core Foundation's side: a CFRunLoop of a thread of its own.
final class CFParityLoop: ParityLoop, @unchecked Sendable {
  let side = "cf"
  let trace = ParityTrace()
  // Set once on the loop's thread before the scenario starts; CFRunLoop is thread-safe for
  // the calls made from other threads (wake up, stop, signal, perform).
  let loop: CFRunLoop
  private var tracer: CFRunLoopObserver?

  init() {
    loop = CFRunLoopGetCurrent()
    let trace = self.trace
    // The tracing observer runs first of all (lowest order), so an activity's entry precedes
    // the call-outs of the scenario's observers, as our side's instrument does.
    tracer = CFRunLoopObserverCreateWithHandler(
      nil, CFRunLoopActivity.allActivities.rawValue, true, CFIndex.min
    ) { _, activity in
      trace.add(Self.activity(activity).rawValue)
    }
    CFRunLoopAddObserver(loop, tracer, kCFRunLoopCommonModes)
  }

  static func activity(_ activity: CFRunLoopActivity) -> ParityActivity {
    ParityActivity(bit: UInt(activity.rawValue))
  }

  static func mask(_ activities: [ParityActivity]) -> CFOptionFlags {
    CFOptionFlags(ParityActivity.mask(activities))
  }

  static func mode(_ name: String) -> CFRunLoopMode {
    switch name {
    case "default": kCFRunLoopDefaultMode
    case "common": kCFRunLoopCommonModes
    default: CFStringCreateWithCString(nil, name, CFStringBuiltInEncodings.UTF8.rawValue)
    }
  }

  func source(_ name: String, order: Int, _ body: @escaping @Sendable () -> Void) -> ParityHandle {
    let handle = ParityHandle(name: name)
    let trace = self.trace
    // The info pointer must differ between sources: CF treats sources of equal order and
    // equal info as one and the same.
    let callback = Unmanaged.passRetained(
      CFParityCallback {
        trace.add("source:\(name)")
        body()
      }
    ).toOpaque()
    var context = CFRunLoopSourceContext()
    context.version = 0
    context.info = callback
    context.perform = { info in
      Unmanaged<CFParityCallback>.fromOpaque(info!).takeUnretainedValue().body()
    }
    handle.object = CFRunLoopSourceCreate(nil, order, &context)
    return handle
  }

  func timer(
    _ name: String, after seconds: Double, every interval: Double?,
    _ body: @escaping @Sendable (ParityHandle) -> Void
  ) -> ParityHandle {
    let handle = ParityHandle(name: name)
    let trace = self.trace
    handle.object = CFRunLoopTimerCreateWithHandler(
      nil, CFAbsoluteTimeGetCurrent() + seconds, interval ?? 0, 0, 0
    ) { _ in
      trace.add("timer:\(name)")
      body(handle)
    }
    return handle
  }

  func observer(
    _ name: String, activities: [ParityActivity], repeats: Bool, order: Int,
    _ body: @escaping @Sendable (ParityHandle, ParityActivity) -> Void
  ) -> ParityHandle {
    let handle = ParityHandle(name: name)
    let trace = self.trace
    handle.object = CFRunLoopObserverCreateWithHandler(
      nil, Self.mask(activities), repeats, order
    ) { _, activity in
      trace.add("observer:\(name)")
      body(handle, Self.activity(activity))
    }
    return handle
  }

  func add(_ item: ParityHandle, mode: String) {
    switch item.object {
    case let source as CFRunLoopSource: CFRunLoopAddSource(loop, source, Self.mode(mode))
    case let timer as CFRunLoopTimer: CFRunLoopAddTimer(loop, timer, Self.mode(mode))
    case let observer as CFRunLoopObserver: CFRunLoopAddObserver(loop, observer, Self.mode(mode))
    default: preconditionFailure("not a CF run-loop item")
    }
  }

  func remove(_ item: ParityHandle, mode: String) {
    switch item.object {
    case let source as CFRunLoopSource: CFRunLoopRemoveSource(loop, source, Self.mode(mode))
    case let timer as CFRunLoopTimer: CFRunLoopRemoveTimer(loop, timer, Self.mode(mode))
    case let observer as CFRunLoopObserver:
      CFRunLoopRemoveObserver(loop, observer, Self.mode(mode))
    default: preconditionFailure("not a CF run-loop item")
    }
  }

  func contains(_ item: ParityHandle, mode: String) -> Bool {
    switch item.object {
    case let source as CFRunLoopSource: CFRunLoopContainsSource(loop, source, Self.mode(mode))
    case let timer as CFRunLoopTimer: CFRunLoopContainsTimer(loop, timer, Self.mode(mode))
    case let observer as CFRunLoopObserver:
      CFRunLoopContainsObserver(loop, observer, Self.mode(mode))
    default: false
    }
  }

  func invalidate(_ item: ParityHandle) {
    switch item.object {
    case let source as CFRunLoopSource: CFRunLoopSourceInvalidate(source)
    case let timer as CFRunLoopTimer: CFRunLoopTimerInvalidate(timer)
    case let observer as CFRunLoopObserver: CFRunLoopObserverInvalidate(observer)
    default: break
    }
  }

  func isValid(_ item: ParityHandle) -> Bool {
    switch item.object {
    case let source as CFRunLoopSource: CFRunLoopSourceIsValid(source)
    case let timer as CFRunLoopTimer: CFRunLoopTimerIsValid(timer)
    case let observer as CFRunLoopObserver: CFRunLoopObserverIsValid(observer)
    default: false
    }
  }

  func signal(_ source: ParityHandle) {
    CFRunLoopSourceSignal((source.object as! CFRunLoopSource))
  }

  func addCommonMode(_ mode: String) {
    CFRunLoopAddCommonMode(loop, Self.mode(mode))
  }

  func run(mode: String, seconds: Double, returnAfterSourceHandled: Bool) -> ParityResult {
    // The tracer is in the common modes; a run in another mode needs it there too. (Adding
    // it twice does nothing.)
    CFRunLoopAddObserver(loop, tracer, Self.mode(mode))
    let result = CFRunLoopRunInMode(Self.mode(mode), seconds, returnAfterSourceHandled)
    let named: ParityResult =
      switch result {
      case .finished: .finished
      case .stopped: .stopped
      case .timedOut: .timedOut
      default: .handledSource
      }
    trace.add("result:\(named.rawValue)")
    return named
  }

  func stop() { CFRunLoopStop(loop) }

  func wakeUp() { CFRunLoopWakeUp(loop) }

  func perform(mode: String, name: String, _ body: @escaping @Sendable () -> Void) {
    let trace = self.trace
    CFRunLoopPerformBlock(loop, Self.mode(mode)) {
      trace.add("block:\(name)")
      body()
    }
  }

  func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

/// A closure kept alive by a CF context's `info` pointer.
final class CFParityCallback {
  let body: () -> Void
  init(_ body: @escaping () -> Void) { self.body = body }
}
