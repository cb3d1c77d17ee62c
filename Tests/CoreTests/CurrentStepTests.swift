import Glibc
import RunLoopCore
import Testing

/// The calling thread's loop's step, as a call-out prints it.
private func step() -> String {
  EventRunLoop.current.currentStep.map(String.init) ?? "nil"
}

@Suite("The step the loop reports")
struct CurrentStepTests {
  // One pass with a perform request, a custom source and a ready descriptor: each call-out
  // reads the step that made it, and the loop reports the same step with the call-out and
  // with each activity.
  @Test func eachCalloutAndActivityCarriesTheStepOfTheSequenceOfEvents() throws {
    let pipe = Pipe()
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder([.activities, .callouts])
      let source = CustomInputSource(name: "source") { recorder.mark("in source: \(step())") }
      try loop.add(source, mode: .default)
      let watch = DescriptorWatch(fileDescriptor: pipe.readEnd, name: "pipe") { _ in
        _ = pipe.readByte()
        recorder.mark("in watch: \(step())")
      }
      try loop.add(watch, mode: .default)
      loop.perform(inModes: [.default], name: "block") { recorder.mark("in block: \(step())") }
      source.signal()
      pipe.writeByte()
      recorder.mark("before the run: \(step())")
      loop.addInstrument(recorder)
      try loop.run(mode: .default, timeout: .zero)
      loop.removeInstrument(recorder)
      recorder.mark("after the run: \(step())")
      return recorder.stepLog
    }
    #expect(
      log == [
        "before the run: nil",
        "1 entry", "2 beforeTimers", "3 beforeSources",
        "in block: 3", "3 callout:block:block",
        "in source: 4", "4 callout:source:source",
        "in watch: 9", "9 callout:port:pipe",
        "10 exit",
        "after the run: nil",
      ])
  }

  // A run that sleeps reports steps 6 and 8 around its sleep, and a descriptor that woke it
  // is handled at step 9.
  @Test func aRunThatSleepsReportsSixAndEightAroundTheSleep() throws {
    let pipe = Pipe()
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder([.activities, .callouts])
      let watch = DescriptorWatch(fileDescriptor: pipe.readEnd, name: "pipe") { _ in
        _ = pipe.readByte()
        loop.stop()
      }
      try loop.add(watch, mode: .default)
      loop.addInstrument(recorder)
      let writer = RunLoopThread(name: "writer") { _ in
        guard eventually(10, { recorder.stepLog.contains("6 beforeWaiting") }) else { return }
        pipe.writeByte()
      }
      try writer.start()
      try loop.run(mode: .default, timeout: .seconds(20))
      try writer.join()
      loop.removeInstrument(recorder)
      return recorder.stepLog
    }
    #expect(
      log == [
        "1 entry", "2 beforeTimers", "3 beforeSources", "6 beforeWaiting", "8 afterWaiting",
        "9 callout:port:pipe", "10 exit",
      ])
  }

  // A call-out that runs the loop nested reads its own step again when the nested run is
  // over, and the nested run's steps are its own.
  @Test func aNestedRunGivesBackTheStepOfTheCalloutThatRanIt() throws {
    let log = try onNewThread { loop -> [String] in
      let recorder = LoopRecorder([.activities, .callouts])
      let inner = CustomInputSource(name: "inner") { recorder.mark("in inner: \(step())") }
      try loop.add(inner, mode: "nested")
      let outer = CustomInputSource(name: "outer") {
        inner.signal()
        _ = try? EventRunLoop.current.run(mode: "nested", timeout: .zero)
        recorder.mark("back in outer: \(step())")
      }
      try loop.add(outer, mode: .default)
      outer.signal()
      try loop.run(mode: .default, timeout: .zero)
      return recorder.stepLog
    }
    #expect(log == ["in inner: 4", "back in outer: 4"])
  }

  @Test func anotherThreadReadsNoStep() throws {
    let worker = try startLoopThread(name: "stepping")
    defer { stopLoopThread(worker) }
    let seen = GuardedState<Int?>(nil)
    try worker.runLoop.performAndWait { seen.withLock { $0 = EventRunLoop.current.currentStep } }
    #expect(seen.withLock { $0 } != nil)
    #expect(worker.runLoop.currentStep == nil)
  }

  @Test func eachActivityNamesItsStep() {
    let steps = LoopActivity.sequence.map(\.step)
    #expect(steps == [1, 2, 3, 6, 8, 10])
    #expect(LoopActivity([.entry, .exit]).step == 0)
  }
}
