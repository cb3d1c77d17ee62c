import CRunLoopLinux
import Glibc
import RunLoopCore
import Synchronization
import Testing

/// The waker under load: while loops poll before sleeping, a wake-up only sets the state of
/// a polling loop, with no eventfd write. None may be lost, whoever wakes the loop and whatever
/// else (nested runs, ready descriptors, interrupted waits) happens meanwhile. Each loop runs
/// with a long timeout, so a lost wake-up shows as a stall, not as a slow test.
///
/// Serialized: the loops need the process's polling places to poll at all.
@Suite("The waker under load", .serialized)
struct WakerStressTests {
  static let hasTwoCPUs = crl_allowed_cpu_count() >= 2

  // Three threads each queue a request and wait (spinning, so the loop's sleeps stay short
  // and it polls) until it ran, then 20 µs more, 3,000 times; their wake-ups race each other
  // on the state. (Without the pause the loop would rarely sleep: requests that come while it
  // is between passes are seen by the next pass without a wake-up.)
  @Test(.enabled(if: hasTwoCPUs, "needs two CPUs"))
  func performRequestsFromSeveralThreadsAtOnceAllRun() throws {
    let worker = try startLoopThread(name: "target")
    let loop = worker.runLoop
    // The longest window: on a loaded machine a blocked thread takes longer than the default
    // 50 µs to wake, and those sleeps would close a shorter window.
    loop.spinLimit = .milliseconds(1)
    let stalled = Atomic<Int>(0)
    let performers = (0..<3).map { index in
      RunLoopThread(name: "performer \(index)") { _ in
        let done = Atomic<Int>(0)
        for round in 1...3000 {
          loop.perform { done.add(1, ordering: .releasing) }
          let deadline = ContinuousClock.now + .seconds(5)
          while done.load(ordering: .acquiring) < round {
            if ContinuousClock.now > deadline {
              stalled.add(1, ordering: .relaxed)
              return
            }
          }
          burn(.microseconds(20))
        }
      }
    }
    for performer in performers { try performer.start() }
    for performer in performers { try performer.join() }
    let spins = loop.spinStatistics
    stopLoopThread(worker)
    #expect(stalled.load(ordering: .relaxed) == 0)
    #expect(spins.caught > 0)
  }

  // Every other call-out of the source runs the loop nested in another mode; the next
  // signal comes while that nested run polls or sleeps, and takes its wake-up. The outer
  // run must still perform the source once the nested run is over.
  @Test(.enabled(if: hasTwoCPUs, "needs two CPUs"))
  func aSignalWhoseWakeUpANestedRunTookIsPerformedByTheOuterRun() throws {
    let performed = Atomic<Int>(0)
    let owner = GuardedState<EventRunLoop?>(nil)
    let source = CustomInputSource(name: "outer") {
      let count = performed.add(1, ordering: .releasing).newValue
      if count % 2 == 1, let loop = owner.withLock({ $0 }) {
        _ = try? loop.run(mode: "nested", timeout: .microseconds(300))
      }
    }
    let worker = try startLoopThread(name: "nesting") { loop in
      owner.withLock { $0 = loop }
      try loop.add(source, mode: .default)
      try loop.add(CustomInputSource {}, mode: "nested")
    }
    var stalled = false
    for round in 1...3000 where !stalled {
      source.signalAndWakeUp()
      let deadline = ContinuousClock.now + .seconds(5)
      while performed.load(ordering: .acquiring) < round, !stalled {
        stalled = ContinuousClock.now > deadline
      }
    }
    owner.withLock { $0 = nil }
    stopLoopThread(worker)
    #expect(!stalled, "stalled after \(performed.load(ordering: .acquiring)) call-outs")
  }

  /// What else happens while two loops bounce a request: nothing, stray wake-ups from a third
  /// thread, a descriptor both loops watch becoming ready (the pass's step-5 check then
  /// takes wake-ups), or signals interrupting their waits.
  enum Disturbance: CaseIterable, Sendable {
    case none, strayWakeUps, readyDescriptor, interruptingSignals
  }

  @Test(.enabled(if: hasTwoCPUs, "needs two CPUs"), arguments: Disturbance.allCases)
  func twoLoopsBouncingARequestNeverStall(disturbance: Disturbance) throws {
    let pipe = Pipe()
    let handles = GuardedState<[pthread_t]>([])
    if disturbance == .interruptingSignals {
      // SIGURG, which nothing else in the tests uses; a handler makes it interrupt epoll_wait.
      var action = sigaction()
      action.__sigaction_handler.sa_handler = { _ in }
      sigaction(SIGURG, &action, nil)
    }
    let workers = try ["ping", "pong"].map { name in
      try startLoopThread(name: name) { loop in
        handles.withLock { $0.append(pthread_self()) }
        if disturbance == .readyDescriptor {
          try loop.add(
            DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in _ = pipe.readByte() },
            mode: .default)
        }
      }
    }
    let loops = workers.map { $0.runLoop }
    let quiet = Atomic<Bool>(false)
    let disturber = RunLoopThread(name: "disturber") { _ in
      while !quiet.load(ordering: .relaxed) {
        switch disturbance {
        case .none: return
        case .strayWakeUps: for loop in loops { loop.wakeUp() }
        case .readyDescriptor:
          pipe.writeByte()
          usleep(20)
        case .interruptingSignals:
          for handle in handles.withLock({ $0 }) { pthread_kill(handle, SIGURG) }
          usleep(5)
        }
      }
    }
    try disturber.start()
    let hops = Atomic<Int>(0)
    let total = 20_000
    @Sendable func hop(at side: Int) {
      guard hops.add(1, ordering: .relaxed).newValue < total else { return }
      loops[1 - side].perform { hop(at: 1 - side) }
    }
    loops[0].perform { hop(at: 0) }
    // Stalled: no hop for 5 s (a hop takes microseconds; the loops' timeouts are a minute).
    var seen = -1
    var lastProgress = ContinuousClock.now
    var stalled = false
    while !stalled, hops.load(ordering: .relaxed) < total {
      let now = hops.load(ordering: .relaxed)
      if now != seen {
        seen = now
        lastProgress = .now
      }
      stalled = ContinuousClock.now - lastProgress > .seconds(5)
      usleep(100)
    }
    quiet.store(true, ordering: .relaxed)
    try disturber.join()
    for worker in workers { stopLoopThread(worker) }
    if disturbance == .interruptingSignals {
      var action = sigaction()
      action.__sigaction_handler.sa_handler = nil  // SIG_DFL
      sigaction(SIGURG, &action, nil)
    }
    #expect(!stalled, "stalled after \(hops.load(ordering: .relaxed)) hops")
  }
}
