import Glibc
import RunLoopCore
import RunLoopPorts
import RunLoopTimers
import Synchronization

extension Scenarios {
  static let ports = Scenario(
    name: "ports", title: "Port-based sources: messages between threads, with back-pressure",
    guide: "Run Loops > Port-Based Sources, Configuring a Port-Based Input Source",
    article: "PortBasedSources.md, In-process ports (the NSMachPort role)",
    exercise: Exercise(
      setUp: [
        "The main thread sends three messages to a worker's port, each naming the main",
        "port for the reply, and runs its loop until the replies are in. Then a timer on",
        "the main loop sends a message to another port of the main loop itself.",
      ],
      question: "In which order do these happen?",
      events: [
        .init(text: "own.port's handler gets the timer's message", marker: "own.port: message 7"),
        .init(text: "the timer's handler sends its message", marker: "timer 'send-to-own-port'"),
        .init(text: "the worker's port handles message 1", marker: "message 1: 'one'"),
        .init(text: "the main port gets reply 1001", marker: "reply 1001"),
      ])
  ) { narration in
    let loop = EventRunLoop.current
    let replies = GuardedState<[String]>([])
    let mainPort = try InProcessPort(name: "main.port") { message in
      let text = String(decoding: message.components.first ?? [], as: UTF8.self)
      replies.withLock { $0.append(text) }
      narration.event("reply \(message.msgid): '\(text)'")
    }
    try mainPort.add(to: loop, mode: .default)
    let workerPortBox = GuardedState<InProcessPort?>(nil)
    let worker = RunLoopThread(name: "worker") { thread in
      let port = try InProcessPort(name: "worker.port") { message in
        let text = String(decoding: message.components.first ?? [], as: UTF8.self)
        narration.event("message \(message.msgid): '\(text)'")
        try? message.sendPort?.send(
          msgid: message.msgid + 1000, components: [Array(text.uppercased().utf8)],
          before: .now + .seconds(1))
      }
      try port.add(to: thread.runLoop, mode: .default)
      workerPortBox.withLock { $0 = port }
      try thread.runLoop.run()
      port.invalidate()
    }
    try worker.start()
    while workerPortBox.withLock({ $0 }) == nil { usleep(1_000) }
    let workerPort = workerPortBox.withLock { $0 }!
    narration.say("The worker's port answers each message on the message's reply port.")
    for (index, word) in ["one", "two", "three"].enumerated() {
      try workerPort.send(
        msgid: PortMessageID(index + 1), components: [Array(word.utf8)], receivePort: mainPort,
        before: .now + .seconds(1))
    }
    let deadline = ContinuousClock.now + .seconds(2)
    while replies.withLock({ $0.count }) < 3 && ContinuousClock.now < deadline {
      _ = try loop.run(mode: .default, timeout: .milliseconds(50))
    }
    narration.expect(
      replies.withLock { $0 } == ["ONE", "TWO", "THREE"], "3 replies, in the order sent")
    worker.runLoop.perform { worker.runLoop.stop() }
    try worker.join()

    narration.say("A timer's handler sends a message to a port of its own loop: the port is")
    narration.say("ready before the loop's next sleep, and that pass finds it in step 5.")
    let recorder = PassStepRecorder()
    let ownPort = try InProcessPort(name: "own.port") { message in
      narration.event("own.port: message \(message.msgid)")
      loop.stop()
    }
    try ownPort.add(to: loop, mode: .default)
    let sender = try LoopTimer(fireAt: .now + .milliseconds(20), name: "send-to-own-port") { _ in
      try? ownPort.send(msgid: 7, before: .now + .seconds(1))
      narration.event("timer 'send-to-own-port' sent message 7 to own.port")
    }
    try loop.add(sender, mode: .default)
    loop.addInstrument(recorder)
    _ = try loop.run(mode: .default, timeout: .seconds(2))
    loop.removeInstrument(recorder)
    ownPort.invalidate()
    let pass = recorder.passes.first { $0.steps.contains { $0.what == "port 'own.port'" } }
    if let pass {
      // The step that found the port, from the steps the loop reported in that pass: no
      // source fired in step 4 and no step 6 means the non-blocking look of step 5 found it.
      let fired = pass.steps.contains { $0.step == 4 }
      let slept = pass.steps.contains { $0.step == 6 }
      let passSteps = pass.steps.map(\.step).filter { $0 < 10 }
      let reported = passSteps.map(String.init).joined(separator: " ")
      narration.event(
        "pass \(pass.iteration) reported steps \(reported): own.port was ready, no sleep",
        at: .step(fired || slept ? 7 : 5))
      narration.expect(
        !fired && !slept && passSteps == [2, 3, 9],
        "the pass that handled it went 2, 3, then the port at 9: found ready in step 5, it"
          + " skipped steps 6 to 8")
    } else {
      narration.expect(false, "a pass handled the message sent to own.port")
    }

    narration.say("A port with room for 2 messages, on a loop that is not running:")
    let small = try InProcessPort(name: "small", capacity: 2) { _ in }
    try small.add(to: loop, mode: LoopMode("elsewhere"))
    try small.send(msgid: 1, before: .now)
    try small.send(msgid: 2, before: .now)
    var refused = false
    do {
      try small.send(msgid: 3, before: .now + .milliseconds(50))
    } catch {
      refused = (error as? RunLoopError)?.code == .queueFull
      narration.event("third send: \(error)", at: .outside)
    }
    narration.expect(
      refused, "the third send waited 50 ms for room, then failed: nothing is dropped silently")
    let told = Atomic<Bool>(false)
    small.onInvalidation { _ in told.store(true, ordering: .relaxed) }
    small.invalidate()
    narration.expect(
      told.load(ordering: .relaxed) && small.discardedOnInvalidation == 2,
      "invalidating it told its handler and discarded the 2 queued messages")
    mainPort.invalidate()
  }

  static let checkIn = Scenario(
    name: "check-in",
    title: "The check-in protocol: a new thread sends its port to the main thread",
    guide: "Run Loops > Configuring an NSMachPort Object, Listings 3-12 to 3-15",
    article: "PortBasedSources.md, The check-in protocol between threads (Listings 3-12 to 3-15)"
  ) { narration in
    let loop = EventRunLoop.current
    enum ID {
      static let checkIn: PortMessageID = 100
      static let work: PortMessageID = 1
      static let result: PortMessageID = 2
      static let exit: PortMessageID = 3
    }
    let workerPort = GuardedState<InProcessPort?>(nil)
    let results = GuardedState<[String]>([])
    // Listing 3-12: the main thread makes its port and launches the worker with it.
    let mainPort = try InProcessPort(name: "main.port") { message in
      switch message.msgid {
      case ID.checkIn:
        // Listing 3-13: the worker's port is the message's send port.
        workerPort.withLock { $0 = message.sendPort }
        narration.event("check-in from '\(message.sendPort?.name ?? "?")'; port kept")
      case ID.result:
        let text = String(decoding: message.components.first ?? [], as: UTF8.self)
        results.withLock { $0.append(text) }
        narration.event("result: \(text)")
      default:
        break
      }
    }
    try mainPort.add(to: loop, mode: .default)
    narration.say("1. The main thread creates its port and starts the worker, giving it the port.")
    let worker = RunLoopThread(name: "worker") { thread in
      let done = Atomic<Bool>(false)
      // Listing 3-15: the worker makes its own port and checks in.
      let myPort = try InProcessPort(name: "worker.port") { message in
        switch message.msgid {
        case ID.work:
          let numbers = message.components.first ?? []
          let sum = numbers.reduce(0) { $0 + Int($1) }
          narration.event("work: summing \(numbers.count) numbers")
          try? message.sendPort?.send(
            msgid: ID.result, components: [Array("sum = \(sum)".utf8)], before: .now + .seconds(1))
        case ID.exit:
          narration.event("exit message: ending the run loop")
          done.store(true, ordering: .relaxed)
          thread.runLoop.stop()
        default:
          break
        }
      }
      try myPort.add(to: thread.runLoop, mode: .default)
      narration.event(
        "2. worker: sending the check-in message (msgid \(ID.checkIn)) with my port",
        at: .outside)
      try mainPort.send(msgid: ID.checkIn, receivePort: myPort, before: .now + .seconds(1))
      while !done.load(ordering: .relaxed) {
        _ = try thread.runLoop.run(mode: .default, timeout: .seconds(1))
      }
      myPort.invalidate()
    }
    try worker.start()
    let deadline = ContinuousClock.now + .seconds(2)
    while workerPort.withLock({ $0 }) == nil && ContinuousClock.now < deadline {
      _ = try loop.run(mode: .default, timeout: .milliseconds(50), returnAfterSourceHandled: true)
    }
    guard let port = workerPort.withLock({ $0 }) else {
      narration.expect(false, "the worker checked in")
      return
    }
    narration.say("3. With the worker's port, the main thread sends work and waits for the result:")
    try port.send(
      msgid: ID.work, components: [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]], receivePort: mainPort,
      before: .now + .seconds(1))
    while results.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline {
      _ = try loop.run(mode: .default, timeout: .milliseconds(50), returnAfterSourceHandled: true)
    }
    narration.expect(
      results.withLock { $0 } == ["sum = 55"], "the worker's result came back on the main port")
    narration.say("4. The main thread asks the worker to exit and joins it:")
    try port.send(msgid: ID.exit, before: .now + .seconds(1))
    try worker.join()
    narration.expect(worker.state == .finished, "the worker thread ended after its run loop did")
    mainPort.invalidate()
  }

  static let threadsAndExit = Scenario(
    name: "threads-exit",
    title: "Threads own run loops; a loop with nothing to do exits; joining and failures",
    guide:
      "Thread Management > Creating a Thread, Terminating a Thread; Run Loops > Exiting the Run Loop",
    article: "ThreadManagement.md, Ending a thread"
  ) { narration in
    narration.say("1. A thread whose loop has no sources: run() returns at once.")
    let quick = RunLoopThread(name: "no-sources") { thread in
      let result = try thread.runLoop.run()
      narration.event("run() returned '\(result)'", at: .outside)
      thread.withThreadDictionary { $0["result"] = result.rawValue }
    }
    try quick.start()
    try quick.join()
    let stored = quick.withThreadDictionary { $0["result"] as? String }
    narration.expect(
      stored == "finished", "the loop finished with nothing to watch, and the thread ended")

    narration.say("2. A thread with a source runs until stopped from another thread:")
    let passes = Atomic<Int>(0)
    let busy = RunLoopThread(name: "server") { thread in
      try thread.runLoop.add(keepAlive("idle"), mode: .default)
      let result = try thread.runLoop.run()
      passes.store(1, ordering: .relaxed)
      narration.event("run() returned '\(result)'; the thread ends", at: .outside)
    }
    try busy.start()
    usleep(50_000)
    narration.expect(
      busy.state == .executing, "after 50 ms it is still running (sleeping in its loop)")
    busy.runLoop.perform(name: "stop") { busy.runLoop.stop() }
    try busy.join()
    narration.expect(
      passes.load(ordering: .relaxed) == 1, "stop() ended its run, and join() returned")

    narration.say(
      "3. A request for a loop whose thread has exited is abandoned, not lost silently:")
    let request = busy.runLoop.perform(name: "too-late") {}
    narration.expect(request.state == .abandoned, "its state is '\(request.state)'")

    narration.say("4. An error thrown on a thread is handed to join():")
    let previous = RunLoopThread.failureHandler
    RunLoopThread.failureHandler = { thread, error in
      narration.event("failure handler: \(thread.name) threw \(error)", at: .outside)
    }
    defer { RunLoopThread.failureHandler = previous }
    let failing = RunLoopThread(name: "failing") { _ in
      throw DemoError("disk full")
    }
    try failing.start()
    var joined: String?
    do {
      try failing.join()
    } catch {
      joined = "\(error)"
    }
    narration.expect(joined != nil, "join() threw: \(joined ?? "nothing")")
  }
}
