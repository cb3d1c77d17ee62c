// A user file that imports Foundation and every module of ours must compile with our
// types unqualified: none of our public names may clash with Foundation's.
import Foundation
import RunLoopCore
import RunLoopJournal
import RunLoopObservers
import RunLoopPorts
import RunLoopTimers
import RunLoopTracing
import Testing

@Suite("Our modules next to Foundation")
struct FoundationCoexistenceTests {
  @Test func everyPublicTypeIsUsableUnqualifiedBesideFoundation() {
    let coreTypes: [Any.Type] = [
      CalloutKind.self, CalloutRecord.self, CustomInputSource.self, DescriptorEvents.self,
      DescriptorWatch.self, EventRunLoop.self, GuardedState<Int>.self, InstrumentInterests.self,
      LoopActivity.self, LoopMode.self, LoopPassInfo.self,
      PerformRequest.self, RunLoopError.self, LoopExecutor.self, LoopEvents<Int>.self,
      (any RunLoopInstrument).self, RunLoopThread.self, RunResult.self, ThreadPriority.self,
    ]
    let timerTypes: [Any.Type] = [Debouncer.self, DelayedPerform.self, LoopTimer.self]
    let portTypes: [Any.Type] = [
      DescriptorOwnership.self, DescriptorSource.self, InProcessPort.self, LoopPortMessage.self,
      NamedPort.self, NamedPortMessage.self, NamedPortServer.self, NamedPortStatistics.self,
      PortNameRegistry.self, ReceivedSignal.self, SignalSource.self, SocketEndpoint.self,
      SocketSource.self,
    ]
    let observerTypes: [Any.Type] = [
      ChromeTrace.self, JSONLinesSink.self, LoopMetrics.self, LoopMetricsSnapshot.self,
      LoopObserver.self, LoopTracer.self, TraceLog.self, TraceRecord.self,
      (any TraceSink).self, TraceSummary.self, TraceTimeline.self, JournalSink.self,
      JournalSinkStatistics.self,
    ]
    // Foundation's own types stay reachable under their names.
    let foundationTypes: [Any.Type] = [RunLoop.self, Timer.self, Thread.self, Port.self]
    #expect(coreTypes.count + timerTypes.count + portTypes.count + observerTypes.count == 48)
    #expect(foundationTypes.count == 4)
  }

  @Test func ourLoopTimerAndObserverRunInAFoundationFile() throws {
    let (log, result) = try Self.onOwnThread { () throws -> ([String], RunResult) in
      let loop = EventRunLoop.current
      let log = GuardedState<[String]>([])
      let observer = LoopObserver(activities: [.entry, .exit]) { _, activity in
        log.withLock { $0.append(activity.name) }
      }
      loop.add(observer, mode: .default)
      let timer = try LoopTimer(fireAt: .now + .milliseconds(5), name: "once") { _ in
        log.withLock { $0.append("timer") }
      }
      try loop.add(timer, mode: .default)
      let result = try loop.run(mode: .default, timeout: .seconds(30))
      return (log.withLock { $0 }, result)
    }
    #expect(log == ["entry", "timer", "exit"])
    #expect(result == .finished)
  }

  /// Runs `body` on a new `RunLoopThread` and returns its result.
  static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
    let box = GuardedState<Result<T, any Error>?>(nil)
    let thread = RunLoopThread(name: "coexistence") { _ in
      let value = Result { try body() }
      box.withLock { $0 = value }
    }
    try thread.start()
    try thread.join()
    return try box.withLock { $0! }.get()
  }
}
