import CRunLoopLinux
import Glibc
import RunLoopCore
import Testing

/// Keeps every call-out record a loop reports, in order.
@Suite("Call-out spans and causes")
struct CalloutSpanTests {
  @Test func tracedCalloutsGetDistinctNonZeroSpansReadableOnTheirThreadWhileTheyRun() throws {
    let (records, seen, outside) = try onNewThread { loop -> ([CalloutRecord], [UInt64], UInt64) in
      let log = LoopRecorder(.callouts)
      loop.addInstrument(log)
      defer { loop.removeInstrument(log) }
      let seen = GuardedState<[UInt64]>([])
      for index in 0..<3 {
        loop.perform(name: "p\(index)") {
          seen.withLock { $0.append(EventRunLoop.currentCalloutSpan) }
        }
      }
      try loop.run(mode: .default, timeout: .zero)
      return (log.records, seen.withLock { $0 }, EventRunLoop.currentCalloutSpan)
    }
    #expect(records.map(\.name) == ["p0", "p1", "p2"])
    #expect(records.map(\.span) == seen)
    #expect(!seen.contains(0))
    #expect(Set(seen).count == 3)
    #expect(outside == 0)
  }

  @Test func aCalloutOfANestedRunRestoresTheOuterCalloutsSpanWhenItReturns() throws {
    let (records, outerBefore, inner, outerAfter) = try onNewThread {
      loop -> ([CalloutRecord], UInt64, UInt64, UInt64) in
      let log = LoopRecorder(.callouts)
      loop.addInstrument(log)
      defer { loop.removeInstrument(log) }
      let spans = GuardedState<[UInt64]>([])
      loop.perform(name: "outer") {
        spans.withLock { $0.append(EventRunLoop.currentCalloutSpan) }
        loop.perform(inModes: [LoopMode("nested")], name: "inner") {
          spans.withLock { $0.append(EventRunLoop.currentCalloutSpan) }
        }
        _ = try? loop.run(mode: LoopMode("nested"), timeout: .zero)
        spans.withLock { $0.append(EventRunLoop.currentCalloutSpan) }
      }
      try loop.run(mode: .default, timeout: .zero)
      let seen = spans.withLock { $0 }
      return (log.records, seen[0], seen[1], seen[2])
    }
    #expect(records.map(\.name) == ["inner", "outer"])
    #expect(inner == records[0].span)
    #expect(outerBefore == records[1].span)
    #expect(outerAfter == outerBefore)
    #expect(inner != outerBefore)
  }

  @Test func aCauseCapturedInsideACalloutNamesItsSpanLoopAndThread() throws {
    let (cause, span, loopID, tid) = try onNewThread {
      loop -> (CalloutCause?, UInt64, UInt64, pid_t) in
      let log = LoopRecorder(.callouts)
      loop.addInstrument(log)
      defer { loop.removeInstrument(log) }
      let captured = GuardedState<CalloutCause?>(nil)
      loop.perform(name: "maker") { captured.withLock { $0 = CalloutCause.capture() } }
      try loop.run(mode: .default, timeout: .zero)
      return (captured.withLock { $0 }, log.records[0].span, loop.id, crl_current_tid())
    }
    #expect(cause == CalloutCause(span: span, threadID: tid, loopID: loopID))
  }

  @Test func aCauseCapturedOnAPlainThreadHasNoLoopAndSpanZero() throws {
    let captured = GuardedState<(CalloutCause, pid_t)?>(nil)
    onPlainThread { captured.withLock { $0 = (CalloutCause.capture(), crl_current_tid()) } }
    let (cause, tid) = try #require(captured.withLock { $0 })
    #expect(cause == CalloutCause(span: 0, threadID: tid, loopID: nil))
    #expect(tid != getpid())
  }

  @Test func aCalloutRunsInTheTraceItsCauseCameWithAndReportsTheCause() throws {
    let cause = CalloutCause(
      span: 0x1234, threadID: 77, loopID: nil, processID: 4242,
      traceID: (high: 0xaaaa, low: 0xbbbb))
    let (records, trace, after) = try onNewThread {
      loop -> ([CalloutRecord], [UInt64], (high: UInt64, low: UInt64)?) in
      let log = LoopRecorder(.callouts)
      loop.addInstrument(log)
      defer { loop.removeInstrument(log) }
      let trace = loop.callOut(.port, name: "message", cause: cause) {
        EventRunLoop.currentTraceID.map { [$0.high, $0.low] } ?? []
      }
      return (log.records, trace, EventRunLoop.currentTraceID)
    }
    #expect(records.count == 1)
    #expect(records.first?.cause == cause)
    #expect(records.first?.span != 0)
    #expect(trace == [0xaaaa, 0xbbbb])
    #expect(after == nil)
  }

  @Test func spansPrintAsSixteenHexDigitsAndParseBack() {
    #expect(UInt64(0x2a).spanHex == "000000000000002a")
    #expect(UInt64(spanHex: "000000000000002a") == 0x2a)
    #expect(UInt64(spanHex: "2a") == nil)
    #expect(UInt64.max.spanHex == "ffffffffffffffff")
  }
}

@Suite("Causes of perform requests, source signals and jobs")
struct CauseCaptureTests {
  /// What a call-out on a traced loop thread "A" that ran `body` looks like as a cause.
  private func causeOfCallout(
    _ body: @escaping @Sendable () -> Void
  ) throws -> CalloutCause {
    try onNewThread("A") { loop -> CalloutCause in
      let log = LoopRecorder(.callouts)
      loop.addInstrument(log)
      defer { loop.removeInstrument(log) }
      loop.perform(name: "sender", body)
      try loop.run(mode: .default, timeout: .zero)
      return CalloutCause(span: log.records[0].span, threadID: crl_current_tid(), loopID: loop.id)
    }
  }

  @Test func aPerformQueuedFromACalloutOnLoopARunsOnLoopBWithAsSpanLoopAndThreadAsItsCause()
    throws
  {
    let log = LoopRecorder(.callouts)
    let b = try startLoopThread(name: "B") { $0.addInstrument(log) }
    defer { stopLoopThread(b) }
    let sender = try causeOfCallout { b.runLoop.perform(name: "effect") {} }
    #expect(eventually { log.records.contains { $0.name == "effect" } })
    let effect = try #require(log.records.first { $0.name == "effect" })
    #expect(effect.kind == .block)
    #expect(effect.cause == sender)
    #expect(effect.cause?.loopID != b.runLoop.id)
    #expect(effect.dueAt != nil)
  }

  /// Loop "B" on a thread of its own, traced into `log`, with `source` in its default mode.
  private func startTracedLoop(with source: CustomInputSource, into log: LoopRecorder) throws
    -> RunLoopThread
  {
    try startLoopThread(name: "B") { loop in
      loop.addInstrument(log)
      try loop.add(source, mode: .default)
    }
  }

  @Test func aSourceSignalledFromAPlainThreadHasNoCauseLoopAndSpanZero() throws {
    let log = LoopRecorder(.callouts)
    let source = CustomInputSource(name: "work") {}
    let b = try startTracedLoop(with: source, into: log)
    defer { stopLoopThread(b) }
    let signaller = GuardedState<pid_t>(0)
    onPlainThread {
      signaller.withLock { $0 = crl_current_tid() }
      source.signalAndWakeUp()
    }
    #expect(eventually { log.records.contains { $0.name == "work" } })
    let effect = try #require(log.records.first { $0.name == "work" })
    #expect(effect.cause == CalloutCause(span: 0, threadID: signaller.withLock { $0 }))
  }

  @Test func aSourceRunsWithTheCauseOfItsFirstSignalSinceItLastRan() throws {
    let log = LoopRecorder(.callouts)
    let source = CustomInputSource(name: "work") {}
    try onNewThread("B") { loop in
      loop.addInstrument(log)
      defer { loop.removeInstrument(log) }
      try loop.add(source, mode: .default)
      let first = GuardedState<pid_t>(0)
      onPlainThread {
        first.withLock { $0 = crl_current_tid() }
        source.signal()
      }
      onPlainThread { source.signal() }
      try loop.run(mode: .default, timeout: .zero)
      source.signal()
      try loop.run(mode: .default, timeout: .zero)
      let performs = log.records.filter { $0.name == "work" }
      #expect(performs.count == 2)
      #expect(performs.first?.cause == CalloutCause(span: 0, threadID: first.withLock { $0 }))
      // The second signal came from the loop's own thread, outside any call-out.
      #expect(
        performs.last?.cause == CalloutCause(span: 0, threadID: crl_current_tid(), loopID: loop.id))
    }
  }

  @Test func aSourceSignalledFromACalloutOnLoopANamesThatCalloutAsItsCause() throws {
    let log = LoopRecorder(.callouts)
    let source = CustomInputSource(name: "work") {}
    let b = try startTracedLoop(with: source, into: log)
    defer { stopLoopThread(b) }
    let sender = try causeOfCallout { source.signalAndWakeUp() }
    #expect(eventually { log.records.contains { $0.name == "work" } })
    #expect(log.records.first { $0.name == "work" }?.cause == sender)
  }

  @Test func aJobEnqueuedFromACalloutOnLoopANamesThatCalloutAsItsCause() throws {
    let log = LoopRecorder(.callouts)
    let b = try startLoopThread(name: "B") { $0.addInstrument(log) }
    defer { stopLoopThread(b) }
    let executor = b.runLoop
    let ran = GuardedState(false)
    let sender = try causeOfCallout {
      Task(executorPreference: executor) { ran.withLock { $0 = true } }
    }
    #expect(eventually { ran.withLock { $0 } })
    #expect(eventually { log.records.contains { $0.kind == .job } })
    let job = try #require(log.records.first { $0.kind == .job })
    #expect(job.cause == sender)
    #expect(job.dueAt != nil)
  }
}
