import Dispatch
import Glibc
import RunLoopCore
import RunLoopPorts
import Synchronization
import Testing

/// The exchange of `aReplyAboveTheMaximumSizeReachesTheClientAsMessageTooLarge`, round after
/// round in one process: a client task that prefers the server's loop sends a request from a
/// Dispatch thread of its own, the consumer (on the loop, as task executor) takes it from the
/// sequence, replies on the loop's thread, and awaits the client. Every await resumes either
/// from another thread (the client's reply) or from the loop's thread inside a port call-out
/// (the sequence's element). A watchdog names the step a stalled round waits in.
@Suite(
  "Named-port requests, many rounds in one process",
  .enabled(if: getenv("RUNLOOP_STRESS") != nil, "a stress test: RUNLOOP_STRESS=1 runs it"))
struct NamedPortRequestsStressTests {
  @Test func everyRoundOfRequestReplyAndAwaitFinishesWithoutAStall() async throws {
    let rounds = 500
    let temporary = try TemporaryRegistry()
    let worker = try startLoopThread(name: "requests-stress")
    defer { stopLoopThread(worker) }
    let (_, requests) = try NamedPortServer.requests(
      name: "stress", registry: temporary.registry, on: worker.runLoop, maxMessageSize: 16)
    // The step the current round is in, and how long it has been there.
    let step = Atomic<Int>(0)
    let done = Atomic<Bool>(false)
    let stalled = GuardedState<[String]>([])
    let names = ["start", "connect", "next", "reply", "client.value", "end"]
    let watchdog = RunLoopThread(name: "requests-watchdog") { _ in
      var last = -1
      var still = 0
      while !done.load(ordering: .relaxed) {
        usleep(100_000)
        let now = step.load(ordering: .relaxed)
        still = now == last ? still + 1 : 0
        last = now
        if still == 100 {  // 10 s in one step
          stalled.withLock { $0.append("round \(now / 8) in \(names[now % 8])") }
          done.store(true, ordering: .relaxed)
        }
      }
    }
    try watchdog.start()
    defer {
      done.store(true, ordering: .relaxed)
      try? watchdog.join()
    }
    try await withTaskExecutorPreference(worker.runLoop) {
      var iterator = requests.makeAsyncIterator()
      for round in 0..<rounds {
        guard !done.load(ordering: .relaxed) else { break }
        step.store(round * 8 + 1, ordering: .relaxed)
        let port = try NamedPort(name: "stress", registry: temporary.registry, maxMessageSize: 16)
        let client = Task(executorPreference: worker.runLoop) { () -> RunLoopError.Code? in
          do throws(RunLoopError) {
            _ = try await port.request(msgid: 1, receiveTimeout: .seconds(30))
            return nil
          } catch {
            return error.code
          }
        }
        step.store(round * 8 + 2, ordering: .relaxed)
        let request = try #require(await iterator.next())
        step.store(round * 8 + 3, ordering: .relaxed)
        #expect(request.reply([UInt8](repeating: 0, count: round % 2 == 0 ? 17 : 3)))
        step.store(round * 8 + 4, ordering: .relaxed)
        let code = await client.value
        #expect(code == (round % 2 == 0 ? .messageTooLarge : nil))
        step.store(round * 8 + 5, ordering: .relaxed)
      }
      // Every round is over: the hop back to the shared threads may wait on a loaded run.
      done.store(true, ordering: .relaxed)
    }
    #expect(stalled.withLock { $0 } == [])
  }
}
