import Glibc
import RunLoopCore
import Testing

/// Regressions of the lock-free pass (the loop thread's snapshot of its sources and
/// providers, the edge-triggered wake-up descriptor, inert cancelled requests).
@Suite("Wake-ups and the pass cache")
struct WakeUpAndPassCacheTests {
  // The wake-up's event can come out of `epoll` in the same batch as a ready descriptor and
  // after it. If the descriptor's handler runs the loop nested before the outer pass has
  // acknowledged that wake-up, the wake flag stays set for the whole nested run, and every
  // wakeUp() made meanwhile (here, stop()'s) is skipped: the nested run sleeps on.
  @Test func aNestedRunStartedByADescriptorHandlerHearsWakeUps() throws {
    let pipe = Pipe()
    let nested = try onNewThread { loop -> RunResult? in
      let inner: LoopMode = "inner"
      try loop.add(CustomInputSource {}, mode: inner)
      let result = GuardedState<RunResult?>(nil)
      let watch = DescriptorWatch(fileDescriptor: pipe.readEnd) { _ in
        _ = pipe.readByte()
        let value = try? loop.run(mode: inner, timeout: .seconds(5))
        result.withLock { $0 = value }
        loop.stop()
      }
      try loop.add(watch, mode: .default)
      // Nothing pending from the set-up.
      try loop.run(mode: .default, timeout: .zero)
      // The descriptor is ready first, then the wake-up: one `epoll` batch, in that order.
      pipe.writeByte()
      loop.wakeUp()
      let stopper = RunLoopThread(name: "stopper") { _ in
        guard eventually(5, { loop.currentMode == inner }) else { return }
        loop.stop()
      }
      try stopper.start()
      try loop.run(mode: .default, timeout: .seconds(10))
      try stopper.join()
      return result.withLock { $0 }
    }
    #expect(nested == .stopped)
  }
}
