import Dispatch
import Glibc
import InMemoryTracing
import RunLoopCore
import RunLoopObservers
import RunLoopPorts
import RunLoopSpans
import RunLoopSpansTestSupport
import RunLoopTestSupport
import RunLoopTimers
import Synchronization
import Testing
import Tracing

/// The process's tracer: `InstrumentationSystem` is bootstrapped once per process.
let testTracer: W3CTestTracer = {
  let tracer = W3CTestTracer(seed: UInt64(getpid()))
  InstrumentationSystem.bootstrap(tracer)
  return tracer
}()

/// A baggage item the request's context carries, to see that a call-out runs in the caller's.
enum RequestIDKey: ServiceContextKey {
  typealias Value = String
}

@Suite(.serialized)
struct LoopSpansTests {
  @Test func workQueuedInsideASpanRunsAsItsChildrenInOneTrace() async throws {
    let recorder = testTracer.recorder
    let spans = LoopSpans()
    let seen = GuardedState<[String: String]>([:])
    @Sendable func note(_ name: String) {
      seen.withLock { $0[name] = ServiceContext.current?.requestID ?? "none" }
    }
    let port = try InProcessPort(name: "spans-port") { _ in note("port") }
    let source = CustomInputSource(name: "spans-source") { note("source") }
    let worker = try startLoopThread(name: "spans-worker") { loop in
      loop.addInstrument(spans)
      try port.add(to: loop, mode: .default)
      try loop.add(source, mode: .default)
    }
    let loop = worker.runLoop

    var context = ServiceContext.topLevel
    context.requestID = "r-1"
    let requestSpan = ServiceContext.$current.withValue(context) {
      recorder.startSpan("request", context: context)
    }
    try await ServiceContext.withValue(requestSpan.context) {
      loop.perform(name: "plain") { note("plain") }
      _ = try await loop.submit(name: "awaited") { note("awaited") }
      loop.perform(after: .milliseconds(1), inModes: [.default], name: "delayed") {
        note("delayed")
      }
      let timer = try LoopTimer(fireAt: .now, name: "timer") { _ in note("timer") }
      try loop.add(timer, mode: .default)
      try port.send(msgid: 1, before: .now + .seconds(30))
      source.signalAndWakeUp()
    }
    requestSpan.end()
    let names = ["plain", "awaited", "delayed", "timer", "port", "source"]
    #expect(await eventuallyAsync { seen.withLock { $0.count } == names.count })
    #expect(seen.withLock { $0 } == Dictionary(uniqueKeysWithValues: names.map { ($0, "r-1") }))
    // Each span ends after its body returned.
    stopLoopThread(worker)

    let finished = recorder.finishedSpans
    let request = try #require(finished.first { $0.operationName == "request" })
    for name in ["plain", "awaited", "delayed", "timer", "spans-port", "spans-source"] {
      let children = finished.filter { $0.operationName == name }
      #expect(children.count == 1, "\(name)")
      #expect(children.first?.parentSpanID == request.spanID, "\(name)")
      #expect(children.first?.traceID == request.traceID, "\(name)")
    }
  }

  @Test func aCalloutSpanCarriesTheLoopsAttributesAndTheLoopTakesItsIDs() async throws {
    let recorder = testTracer.recorder
    let spans = LoopSpans()
    let ids = GuardedState<[String]>([])
    let worker = try startLoopThread(name: "spans-attributes") { $0.addInstrument(spans) }
    defer { stopLoopThread(worker) }
    let loop = worker.runLoop
    let probe = Probe(ids)
    loop.addInstrument(probe)
    _ = try await loop.submit(name: "attributed") {}
    #expect(await eventuallyAsync { ids.withLock { !$0.isEmpty } })
    // The span ends after the loop reported the call-out.
    #expect(
      await eventuallyAsync { recorder.finishedSpans.contains { $0.operationName == "attributed" } }
    )
    let span = try #require(recorder.finishedSpans.last { $0.operationName == "attributed" })
    #expect(span.attributes["runloop.callout.kind"]?.toSpanAttribute() == "block")
    #expect(span.attributes["runloop.loop"]?.toSpanAttribute() == .int64(Int64(loop.id)))
    #expect(span.attributes["runloop.mode"]?.toSpanAttribute() == "default")
    #expect(span.attributes["runloop.depth"]?.toSpanAttribute() == 1)
    #expect(span.attributes["thread.id"] != nil)
    #expect(span.attributes["runloop.iteration"] != nil)
    // The record the loop reports names the span the tracer made, at the step it reports.
    #expect(ids.withLock { $0 } == ["\(span.traceID)/\(span.spanID)"])
    let step = try #require(probe.steps.withLock { $0.first })
    #expect((1...10).contains(step))
    #expect(span.attributes["runloop.step"]?.toSpanAttribute() == .int64(Int64(step)))
    loop.removeInstrument(probe)
  }
}

@Suite(.serialized)
struct LoopSpansStallTests {
  @Test func aStallReportBecomesAnEventOfTheStalledCalloutsSpan() async throws {
    let recorder = testTracer.recorder
    let spans = LoopSpans()
    let watchdog = StallWatchdog(threshold: .milliseconds(20), reportingTo: spans)
    // Both on the loop's thread before it runs: attached from another thread, an instrument
    // sees the loop from its next pass, and the pass the submit wakes may be the one
    // under way.
    let worker = try startLoopThread(name: "spans-stall") { loop in
      loop.addInstrument(spans)
      watchdog.attach(to: loop)
    }
    // The call-out stays busy until its own span holds the watchdog's report.
    let sawStall = try await worker.runLoop.submit(name: "stalling") { () -> Bool in
      let deadline = ContinuousClock.now + .seconds(30)
      while ContinuousClock.now < deadline {
        let own = recorder.activeSpans.first { $0.operationName == "stalling" }
        if own?.events.contains(where: { $0.name == "runloop.stall" }) == true { return true }
        usleep(1000)
      }
      return false
    }
    stopLoopThread(worker)
    watchdog.close()
    #expect(sawStall)
    let span = try #require(recorder.finishedSpans.first { $0.operationName == "stalling" })
    #expect(span.events.filter { $0.name == "runloop.stall" }.count == 1)
    let stall = try #require(span.events.first { $0.name == "runloop.stall" })
    #expect(stall.attributes["runloop.mode"]?.toSpanAttribute() == "default")
    #expect(stall.attributes["runloop.awake_ns"] != nil)
  }
}

/// Records the trace and span id, and the step, of each `attributed` call-out the loop reports.
private final class Probe: RunLoopInstrument {
  let ids: GuardedState<[String]>
  let steps = GuardedState<[Int]>([])
  init(_ ids: GuardedState<[String]>) { self.ids = ids }
  var interests: InstrumentInterests { .callouts }
  var notificationOrder: Int { 1 }
  func runLoop(_ loop: EventRunLoop, didCallOut callout: CalloutRecord, _ info: LoopPassInfo) {
    guard callout.name == "attributed", let trace = callout.traceID else { return }
    ids.withLock { $0.append("\(hex(trace.high))\(hex(trace.low))/\(hex(callout.span))") }
    steps.withLock { $0.append(info.step) }
  }
}

private func hex(_ value: UInt64) -> String {
  let digits = String(value, radix: 16)
  return String(repeating: "0", count: 16 - digits.count) + digits
}

extension ServiceContext {
  fileprivate var requestID: String? {
    get { self[RequestIDKey.self] }
    set { self[RequestIDKey.self] = newValue }
  }
}
