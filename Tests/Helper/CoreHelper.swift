import Dispatch
import Glibc
import RunLoopCore

/// `core-main-queue`: the main run loop, on the main thread, drains `DispatchQueue.main`
/// and runs `@MainActor` jobs while it runs in a common mode, and holds them while it runs
/// in a mode that is not common. Prints one line per event for the test to read.
func runCoreHelper(_ arguments: [String]) -> Never {
  switch arguments.first {
  case "core-main-queue":
    mainQueueScenario()
  case "core-main-queue-nested":
    nestedMainQueueScenario()
  case "core-main-queue-nested-run":
    mainQueueNestedRunScenario()
  default:
    print("unknown core subcommand \(arguments)")
    exit(2)
  }
}

private func mainQueueScenario() -> Never {
  let loop = EventRunLoop.main
  let seen = GuardedState<[String]>([])
  @Sendable func note(_ line: String) {
    seen.withLock { $0.append(line) }
    print(line)
  }
  // 1. A non-common mode holds main-queue work.
  let privateMode: LoopMode = "private"
  do {
    try loop.add(CustomInputSource(name: "keep-private-alive") {}, mode: privateMode)
  } catch {
    print("error: \(error)")
    exit(1)
  }
  DispatchQueue.main.async { note("held-block") }
  let held = (try? loop.run(mode: privateMode, timeout: .milliseconds(100))) ?? .finished
  print("private-mode:\(held):ran=\(seen.withLock { $0.contains("held-block") })")

  // 2. The default (common) mode drains it, plus blocks from other threads and the main actor.
  DispatchQueue.global().async {
    DispatchQueue.main.async { note("from-global") }
  }
  Task { @MainActor in note("main-actor") }
  let deadline = ContinuousClock.now + .seconds(20)
  while seen.withLock({ $0.count }) < 3 && ContinuousClock.now < deadline {
    _ = try? loop.run(mode: .default, timeout: .milliseconds(50))
  }
  print("done:\(seen.withLock { $0.sorted().joined(separator: ",") })")
  exit(0)
}

/// `core-main-queue-nested`: a main-queue block that runs the main loop nested does not get
/// a later main-queue block run inside it (the main queue is serial).
private func nestedMainQueueScenario() -> Never {
  let loop = EventRunLoop.main
  let order = GuardedState<[String]>([])
  DispatchQueue.main.async {
    order.withLock { $0.append("A-start") }
    DispatchQueue.main.async { order.withLock { $0.append("B") } }
    _ = try? loop.run(mode: .default, timeout: .milliseconds(100))
    order.withLock { $0.append("A-end") }
  }
  let deadline = ContinuousClock.now + .seconds(10)
  while order.withLock({ $0.count }) < 3 && ContinuousClock.now < deadline {
    _ = try? loop.run(mode: .default, timeout: .milliseconds(50))
  }
  print("order:\(order.withLock { $0.joined(separator: ",") })")
  exit(0)
}

/// A run nested in main-queue work, with more main-queue work queued: it does not serve the
/// main queue, so it sleeps until its timeout instead of returning "handled source" at once.
private func mainQueueNestedRunScenario() -> Never {
  let loop = EventRunLoop.main
  let seen = GuardedState<[String]>([])
  do {
    try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
  } catch {
    print("error: \(error)")
    exit(1)
  }
  DispatchQueue.main.async {
    DispatchQueue.main.async { seen.withLock { $0.append("B") } }
    let result = try? loop.run(
      mode: .default, timeout: .milliseconds(50), returnAfterSourceHandled: true)
    seen.withLock { $0.append("nested:\(result.map { "\($0)" } ?? "error")") }
  }
  let deadline = ContinuousClock.now + .seconds(10)
  while seen.withLock({ $0.count }) < 2 && ContinuousClock.now < deadline {
    _ = try? loop.run(mode: .default, timeout: .milliseconds(50))
  }
  print("order:\(seen.withLock { $0.joined(separator: ",") })")
  exit(0)
}
