import Glibc
import RunLoopCore
import Synchronization
import Testing

/// Counters one producer shares with the consumer loop.
private final class ProducerState: Sendable {
  let signalled = Atomic<Int>(0)
  let seenBySource = Atomic<Int>(0)
  let performsRun = Atomic<Int>(0)
  let outOfOrder = Atomic<Int>(0)
  let nextSequence = Atomic<Int>(0)
}

@Suite("Stress: many threads signalling and performing")
struct StressTests {
  static let producers = 8
  static let perProducer = 100_000

  @Test func everyPerformRunsOnceInOrderAndNoSignalIsLost() throws {
    let states = (0..<Self.producers).map { _ in ProducerState() }
    let ready = Atomic<Int>(0)
    let consumer = RunLoopThread(name: "consumer") { thread in
      let loop = thread.runLoop
      for state in states {
        let source = CustomInputSource(name: "producer") {
          // The source's perform sees every increment made before the signal it answers.
          state.seenBySource.store(state.signalled.load(ordering: .acquiring), ordering: .releasing)
        }
        try loop.add(source, mode: .default)
        thread.withThreadDictionary { $0["source\(ObjectIdentifier(state).hashValue)"] = source }
      }
      ready.store(1, ordering: .releasing)
      while !thread.isCancelled {
        try loop.run(mode: .default, timeout: .milliseconds(200))
      }
    }
    try consumer.start()
    while ready.load(ordering: .acquiring) == 0 { usleep(100) }
    let loop = consumer.runLoop
    let sources = states.map { state in
      consumer.withThreadDictionary { $0["source\(ObjectIdentifier(state).hashValue)"] }
        as! CustomInputSource
    }

    var producers: [RunLoopThread] = []
    for (index, state) in states.enumerated() {
      let source = sources[index]
      let producer = RunLoopThread(name: "producer\(index)") { _ in
        for sequence in 0..<Self.perProducer {
          state.signalled.wrappingAdd(1, ordering: .releasing)
          source.signal()
          loop.perform {
            let expected = state.nextSequence.load(ordering: .relaxed)
            if expected != sequence { state.outOfOrder.wrappingAdd(1, ordering: .relaxed) }
            state.nextSequence.store(sequence + 1, ordering: .relaxed)
            state.performsRun.wrappingAdd(1, ordering: .relaxed)
          }
          loop.wakeUp()
        }
      }
      try producer.start()
      producers.append(producer)
    }
    for producer in producers { try producer.join() }

    // No new signal is sent from here on: the last ones must already be enough.
    let settled = eventually(120) {
      states.allSatisfy {
        $0.seenBySource.load(ordering: .acquiring) == Self.perProducer
          && $0.performsRun.load(ordering: .acquiring) == Self.perProducer
      }
    }
    consumer.cancel()
    loop.wakeUp()
    try consumer.join()
    #expect(settled)
    for state in states {
      #expect(state.performsRun.load(ordering: .acquiring) == Self.perProducer)
      #expect(state.seenBySource.load(ordering: .acquiring) == Self.perProducer)
      #expect(state.outOfOrder.load(ordering: .acquiring) == 0)
    }
  }
}
