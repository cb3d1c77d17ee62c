/// One run loop, Core Foundation's or ours, driven by a parity scenario. Scenarios are written
/// once against this protocol and run on both sides; each side records into its `trace` in
/// the shared vocabulary (see ``ParityTrace``): activities (told before any observer's
/// call-out), then each call-out as `kind:name` just before the scenario's body runs, and each
/// run's result as `result:...`.
///
/// Everything but ``wakeUp()``, ``stop()``, ``signal(_:)`` and ``perform(mode:name:_:)`` is
/// called on the loop's own thread.
protocol ParityLoop: AnyObject, Sendable {
  /// `cf` or `ours`.
  var side: String { get }
  var trace: ParityTrace { get }

  func source(_ name: String, order: Int, _ body: @escaping @Sendable () -> Void) -> ParityHandle
  func timer(
    _ name: String, after seconds: Double, every interval: Double?,
    _ body: @escaping @Sendable (ParityHandle) -> Void
  ) -> ParityHandle
  func observer(
    _ name: String, activities: [ParityActivity], repeats: Bool, order: Int,
    _ body: @escaping @Sendable (ParityHandle, ParityActivity) -> Void
  ) -> ParityHandle

  func add(_ item: ParityHandle, mode: String)
  func remove(_ item: ParityHandle, mode: String)
  func contains(_ item: ParityHandle, mode: String) -> Bool
  func invalidate(_ item: ParityHandle)
  func isValid(_ item: ParityHandle) -> Bool
  func signal(_ source: ParityHandle)
  func addCommonMode(_ mode: String)

  /// Runs the loop and records `result:...`.
  @discardableResult
  func run(mode: String, seconds: Double, returnAfterSourceHandled: Bool) -> ParityResult
  func stop()
  func wakeUp()
  /// Queues a block (CFRunLoopPerformBlock or `perform(inModes:)`); its call-out is
  /// `block:name`.
  func perform(mode: String, name: String, _ body: @escaping @Sendable () -> Void)
  /// Seconds on a monotonic clock, for scenarios that compare shapes in time.
  func now() -> Double
}

extension ParityLoop {
  func source(_ name: String, order: Int = 0) -> ParityHandle {
    source(name, order: order) {}
  }

  func source(_ name: String, _ body: @escaping @Sendable () -> Void) -> ParityHandle {
    source(name, order: 0, body)
  }

  func observer(
    _ name: String, _ activities: [ParityActivity] = ParityActivity.allCases, repeats: Bool = true,
    order: Int = 0
  ) -> ParityHandle {
    observer(name, activities: activities, repeats: repeats, order: order) { _, _ in }
  }

  @discardableResult
  func run(_ seconds: Double, mode: String = "default", returnAfterSourceHandled: Bool = false)
    -> ParityResult
  {
    run(mode: mode, seconds: seconds, returnAfterSourceHandled: returnAfterSourceHandled)
  }

  func mark(_ text: String) { trace.add(text) }
}
