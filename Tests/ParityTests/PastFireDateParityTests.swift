import Testing

/// A timer made with a fire date already in the past, on CFRunLoop and on ours: CF replaces
/// the date with the creation time, so a repeating timer's grid starts at its creation and
/// timers made with past dates fire in the order they were made, whatever order they were
/// added in and whichever past date was earlier.
@Suite("Parity: timers made with a past fire date")
struct PastFireDateParityTests {
  @Test func timersMadeWithPastDatesFireInCreationOrderWhateverTheAddOrder() {
    let traces = Parity.run { loop in
      // Each later timer has an earlier past date than the one made before it.
      let a = loop.timer("a", after: -1, every: nil) { _ in }
      let b = loop.timer("b", after: -2, every: nil) { _ in }
      let c = loop.timer("c", after: -3, every: nil) { _ in }
      loop.add(c, mode: "default")
      loop.add(a, mode: "default")
      loop.add(b, mode: "default")
      loop.run(5)
    }
    let fires = traces.cf.filter { $0.hasPrefix("timer:") }
    #expect(fires == ["timer:a", "timer:b", "timer:c"])
    #expect(traces.cf.last == "result:finished")
    #expect(traces.ours == traces.cf)
  }

  @Test func repeatingTimerMadeWithAPastDateStartsItsGridAtItsCreation() {
    let traces = Parity.run { loop in
      let fires = Shared<[Double]>([])
      let created = loop.now()
      // A grid kept from the past date would have a point 0.1 s after creation; the grid
      // from the creation has its second point a whole interval after the first fire.
      let timer = loop.timer("grid", after: -1.1, every: 0.4) { handle in
        let count = fires.update { fires in
          fires.append(loop.now() - created)
          return fires.count
        }
        guard count == 2 else { return }
        loop.invalidate(handle)
        let gap = fires.value[1] - fires.value[0]
        loop.mark(gap >= 0.3 ? "second fire a whole interval after the first" : "early")
      }
      loop.add(timer, mode: "default")
      loop.run(5)
    }
    let marks = traces.cf.filter { !$0.hasPrefix("before") && !$0.hasPrefix("after") }
    #expect(
      marks == [
        "entry", "timer:grid", "timer:grid", "second fire a whole interval after the first",
        "exit", "result:finished",
      ])
    #expect(traces.ours == traces.cf)
  }
}
