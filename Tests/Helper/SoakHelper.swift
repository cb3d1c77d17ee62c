import Dispatch
import Foundation
import Glibc
import RunLoopCore
import RunLoopPorts
import Synchronization

/// `soak SECONDS [PERFORMERS]`: floods one run loop with perform requests (from PERFORMERS
/// threads, default 4), port messages (2 threads) and signals (SIGUSR1, one at a time) for
/// SECONDS, sampling the resident set size each second; then drains everything and checks
/// that nothing was lost and that memory stayed bounded. Prints a line every 10 s and a
/// verdict; exit status 0 when it passed. `scripts/soak.sh` runs it (not part of the tests).
func runSoakHelper(_ arguments: [String]) -> Never {
  let seconds = arguments.count > 1 ? Int(arguments[1]) ?? 60 : 60
  let performers = arguments.count > 2 ? Int(arguments[2]) ?? 4 : 4
  // RUNLOOP_SOAK_NO_POLLING=1 turns polling before sleep off, to tell its part in a stall.
  if getenv("RUNLOOP_SOAK_NO_POLLING") != nil { EventRunLoop.defaultSpinLimit = .zero }
  do {
    try SignalSource.block([SIGUSR1])
    exit(try Soak(performers: performers).run(seconds: seconds) ? 0 : 1)
  } catch {
    print("soak: error: \(error)")
    exit(2)
  }
}

private final class Soak: Sendable {
  let performers: Int
  // Each performer keeps at most this many requests outstanding (queued and not yet run):
  // a flood with a window, as a producer under back-pressure behaves.
  static let window = 20_000
  let running = Atomic<Bool>(true)
  let performsSent = Atomic<Int>(0)
  let performsRun = Atomic<Int>(0)
  let messagesSent = Atomic<Int>(0)
  let messagesRefused = Atomic<Int>(0)
  let messagesReceived = Atomic<Int>(0)
  let signalsSent = Atomic<Int>(0)
  let signalsReceived = Atomic<Int>(0)
  let signalsLost = Atomic<Int>(0)
  // The longest a signal took from kill(2) to its handler, in microseconds.
  let slowestSignal = Atomic<Int>(0)

  init(performers: Int) {
    self.performers = performers
  }

  static func residentKilobytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
      let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
  }

  func run(seconds: Int) throws -> Bool {
    let ready = DispatchSemaphore(value: 0)
    let loopEnded = DispatchSemaphore(value: 0)
    let box = GuardedState<(EventRunLoop, InProcessPort)?>(nil)
    let loopThread = Thread { [self] in
      let loop = EventRunLoop.current
      do {
        let port = try InProcessPort(name: "soak.port", capacity: 4096) { [self] _ in
          messagesReceived.add(1, ordering: .relaxed)
        }
        try port.add(to: loop, mode: .default)
        let signals = try SignalSource(signals: [SIGUSR1], name: "soak.signals") { [self] _ in
          signalsReceived.add(1, ordering: .releasing)
        }
        try signals.add(to: loop, mode: .default)
        box.withLock { $0 = (loop, port) }
        ready.signal()
        while running.load(ordering: .acquiring) || !drained() {
          _ = try loop.run(mode: .default, before: .now + .milliseconds(200))
        }
        signals.invalidate()
        port.invalidate()
        loopEnded.signal()
      } catch {
        print("soak: loop thread: \(error)")
        exit(2)
      }
    }
    loopThread.start()
    ready.wait()
    let (loop, port) = box.withLock { $0! }

    var threads: [Thread] = []
    for _ in 0..<performers {
      threads.append(
        Thread { [self] in
          while running.load(ordering: .relaxed) {
            let outstanding =
              performsSent.load(ordering: .relaxed) - performsRun.load(ordering: .relaxed)
            if outstanding > Self.window * performers {
              usleep(50)
              continue
            }
            performsSent.add(1, ordering: .relaxed)
            loop.perform { [self] in performsRun.add(1, ordering: .relaxed) }
          }
        })
    }
    for _ in 0..<2 {
      threads.append(
        Thread { [self] in
          let payload = [UInt8](repeating: 7, count: 64)
          while running.load(ordering: .relaxed) {
            do {
              try port.send(msgid: 1, components: [payload], before: .now + .milliseconds(100))
              messagesSent.add(1, ordering: .relaxed)
            } catch {
              // The port's bounded queue pushed back; the message was not taken.
              messagesRefused.add(1, ordering: .relaxed)
            }
          }
        })
    }
    threads.append(
      Thread { [self] in
        while running.load(ordering: .relaxed) {
          let before = signalsReceived.load(ordering: .acquiring)
          signalsSent.add(1, ordering: .relaxed)
          kill(getpid(), SIGUSR1)
          let sent = ContinuousClock.now
          // A signal not handled within 10 s counts as lost (a slow one is only slow: the
          // machine has two cores for seven busy threads).
          while signalsReceived.load(ordering: .acquiring) == before {
            if ContinuousClock.now > sent + .seconds(10) {
              signalsLost.add(1, ordering: .relaxed)
              break
            }
            usleep(100)
          }
          let (wholeSeconds, attoseconds) = (ContinuousClock.now - sent).components
          let micros = Int(wholeSeconds) * 1_000_000 + Int(attoseconds / 1_000_000_000_000)
          slowestSignal.max(micros, ordering: .relaxed)
        }
      })
    let start = ContinuousClock.now
    for thread in threads { thread.start() }

    var samples: [Int] = []
    for second in 1...seconds {
      sleep(1)
      samples.append(Self.residentKilobytes())
      if second % 10 == 0 || second == seconds {
        print(
          "soak: \(second) s: \(performsRun.load(ordering: .relaxed)) performs, "
            + "\(messagesReceived.load(ordering: .relaxed)) messages, "
            + "\(signalsReceived.load(ordering: .relaxed)) signals; "
            + "resident \(samples.last! / 1024) MiB")
      }
    }
    running.store(false, ordering: .releasing)
    let drainDeadline = ContinuousClock.now + .seconds(30)
    while !drained(), ContinuousClock.now < drainDeadline { usleep(10_000) }
    loop.wakeUp()
    loopEnded.wait()
    let elapsed = ContinuousClock.now - start

    // Bounded: after the first quarter (warm-up), the resident size grows by less than
    // 32 MiB however long the flood goes on.
    let warm = samples[max(0, samples.count / 4 - 1)]
    let peak = samples.max() ?? 0
    let bounded = peak - warm < 32 * 1024
    let lostPerforms = performsSent.load(ordering: .relaxed) - performsRun.load(ordering: .relaxed)
    let lostMessages =
      messagesSent.load(ordering: .relaxed) - messagesReceived.load(ordering: .relaxed)
    let lostSignals = signalsLost.load(ordering: .relaxed)
    let passed = bounded && lostPerforms == 0 && lostMessages == 0 && lostSignals == 0
    print(
      "soak: \(passed ? "PASSED" : "FAILED") after \(elapsed): "
        + "\(performsRun.load(ordering: .relaxed)) performs from \(performers) threads "
        + "(\(lostPerforms) lost), \(messagesReceived.load(ordering: .relaxed)) port messages "
        + "(\(lostMessages) lost, \(messagesRefused.load(ordering: .relaxed)) sends pushed back "
        + "by the full queue), \(signalsReceived.load(ordering: .relaxed)) of "
        + "\(signalsSent.load(ordering: .relaxed)) signals (\(lostSignals) lost, the slowest "
        + "handled \(slowestSignal.load(ordering: .relaxed) / 1000) ms after kill); resident "
        + "\(warm / 1024) MiB after warm-up, peak \(peak / 1024) MiB, end \(samples.last! / 1024) MiB"
    )
    return passed
  }

  private func drained() -> Bool {
    performsSent.load(ordering: .relaxed) == performsRun.load(ordering: .relaxed)
      && messagesSent.load(ordering: .relaxed) == messagesReceived.load(ordering: .relaxed)
  }
}
