import Dispatch
import RunLoopCore
import RunLoopObservers
import RunLoopTimers

/// Our side: an `EventRunLoop` of a thread of its own. Its activities come from an
/// instrument, which the loop tells before any observer (the observers' registry comes
/// after the recorders).
final class OurParityLoop: ParityLoop, @unchecked Sendable {
  let side = "ours"
  let trace = ParityTrace()
  let loop: EventRunLoop

  init() {
    loop = EventRunLoop.current
    loop.addInstrument(ActivityTracer(trace))
  }

  static func activity(_ activity: LoopActivity) -> ParityActivity {
    ParityActivity(bit: UInt(activity.rawValue))
  }

  static func activities(_ activities: [ParityActivity]) -> LoopActivity {
    LoopActivity(rawValue: .init(ParityActivity.mask(activities)))
  }

  static func mode(_ name: String) -> LoopMode {
    switch name {
    case "default": .default
    case "common": .common
    default: LoopMode(name)
    }
  }

  func source(_ name: String, order: Int, _ body: @escaping @Sendable () -> Void) -> ParityHandle {
    let handle = ParityHandle(name: name)
    let trace = self.trace
    handle.object = CustomInputSource(name: name, order: order) {
      trace.add("source:\(name)")
      body()
    }
    return handle
  }

  func timer(
    _ name: String, after seconds: Double, every interval: Double?,
    _ body: @escaping @Sendable (ParityHandle) -> Void
  ) -> ParityHandle {
    let handle = ParityHandle(name: name)
    let trace = self.trace
    let fireAt = ContinuousClock.now + .nanoseconds(Int64(seconds * 1e9))
    handle.object = try! LoopTimer(
      fireAt: fireAt, every: interval.map { .nanoseconds(Int64($0 * 1e9)) }, name: name
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
    handle.object = LoopObserver(
      activities: Self.activities(activities), repeats: repeats, order: order, name: name
    ) { _, activity in
      trace.add("observer:\(name)")
      body(handle, Self.activity(activity))
    }
    return handle
  }

  func add(_ item: ParityHandle, mode: String) {
    switch item.object {
    case let source as CustomInputSource: try! loop.add(source, mode: Self.mode(mode))
    case let timer as LoopTimer: try! loop.add(timer, mode: Self.mode(mode))
    case let observer as LoopObserver: loop.add(observer, mode: Self.mode(mode))
    default: preconditionFailure("not one of our run-loop items")
    }
  }

  func remove(_ item: ParityHandle, mode: String) {
    switch item.object {
    case let source as CustomInputSource: loop.remove(source, mode: Self.mode(mode))
    case let timer as LoopTimer: loop.remove(timer, mode: Self.mode(mode))
    case let observer as LoopObserver: loop.remove(observer, mode: Self.mode(mode))
    default: preconditionFailure("not one of our run-loop items")
    }
  }

  func contains(_ item: ParityHandle, mode: String) -> Bool {
    switch item.object {
    case let source as CustomInputSource: loop.contains(source, mode: Self.mode(mode))
    case let timer as LoopTimer: loop.contains(timer, mode: Self.mode(mode))
    case let observer as LoopObserver: loop.contains(observer, mode: Self.mode(mode))
    default: false
    }
  }

  func invalidate(_ item: ParityHandle) {
    switch item.object {
    case let source as CustomInputSource: source.invalidate()
    case let timer as LoopTimer: timer.invalidate()
    case let observer as LoopObserver: observer.invalidate()
    default: break
    }
  }

  func isValid(_ item: ParityHandle) -> Bool {
    switch item.object {
    case let source as CustomInputSource: source.isValid
    case let timer as LoopTimer: timer.isValid
    case let observer as LoopObserver: observer.isValid
    default: false
    }
  }

  func signal(_ source: ParityHandle) {
    (source.object as! CustomInputSource).signal()
  }

  func addCommonMode(_ mode: String) {
    loop.addCommonMode(Self.mode(mode))
  }

  func run(mode: String, seconds: Double, returnAfterSourceHandled: Bool) -> ParityResult {
    let result = try! loop.run(
      mode: Self.mode(mode), seconds: seconds, returnAfterSourceHandled: returnAfterSourceHandled)
    let named = ParityResult(rawValue: result.rawValue)!
    trace.add("result:\(named.rawValue)")
    return named
  }

  func stop() { loop.stop() }

  func wakeUp() { loop.wakeUp() }

  func perform(mode: String, name: String, _ body: @escaping @Sendable () -> Void) {
    let trace = self.trace
    loop.perform(inModes: [Self.mode(mode)], name: name) {
      trace.add("block:\(name)")
      body()
    }
  }

  func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

/// Records the loop's activities into a parity trace.
private final class ActivityTracer: RunLoopInstrument, @unchecked Sendable {
  let trace: ParityTrace
  init(_ trace: ParityTrace) { self.trace = trace }
  var interests: InstrumentInterests { .activities }
  func runLoop(_ loop: EventRunLoop, didReach activity: LoopActivity, _ info: LoopPassInfo) {
    trace.add(OurParityLoop.activity(activity).rawValue)
  }
}
