import RunLoopTestSupport
import Testing

@testable import RunLoopCore

/// Custom sources by the hundred thousand: adding and invalidating cost constant work per
/// source, amortized, whatever the sources' orders, and a pass right after a change looks at the
/// signalled sources only, never at every source of its mode. The table counts the entries
/// its changes and resolutions look at (`LoopModeTable.work`) and the loop's inbox the entries step 4
/// looks at (`SignalInbox.examined`), so the tests compare counts, not times.
@Suite("Custom sources at scale")
struct CustomSourceScaleTests {
  private struct Scale: Sendable {
    var work: Int
    var examined: Int
    var performed: Int
    var joined: Bool
    var left: Int
  }

  private final class Counter: @unchecked Sendable {
    let value = GuardedState(0)
    func add() { value.withLock { $0 += 1 } }
  }

  /// Adds `count` sources to the common modes and one to the default mode; then makes
  /// `changes` changes (a source added to `.common`, or removed), each followed by a pass in
  /// the default mode with one source signalled; then invalidates them all.
  private func scale(_ count: Int, changes: Int) throws -> Scale {
    try onNewThread("scale") { loop in
      let performed = Counter()
      let sources = (0..<count).map { index in
        CustomInputSource(name: "s\(index)") { performed.add() }
      }
      for source in sources { try loop.add(source, mode: .common) }
      try loop.add(CustomInputSource(name: "own") {}, mode: .default)
      let extra = CustomInputSource(name: "extra") {}
      let examinedBefore = loop.signalInbox.examined
      for change in 0..<changes {
        if change % 2 == 0 {
          try loop.add(extra, mode: .common)
        } else {
          loop.remove(extra, mode: .common)
        }
        sources[(change * 7919) % count].signal()
        try loop.run(mode: .default, timeout: .zero)
      }
      let examined = loop.signalInbox.examined - examinedBefore
      let joined = loop.contains(sources[count - 1], mode: .default)
      for source in sources { source.invalidate() }
      return loop.state.withLock { state in
        Scale(
          work: state.sources.work, examined: examined, performed: performed.value.withLock { $0 },
          joined: joined,
          left: state.sources.items(for: .default, commonModes: state.commonModes).count)
      }
    }
  }

  @Test func aPassAfterEachChangeLooksOnlyAtTheSignalledSourcesAt100kSources() throws {
    let small = try scale(10_000, changes: 100)
    let large = try scale(100_000, changes: 100)
    #expect(small.performed == 100 && large.performed == 100)
    #expect(small.joined && large.joined)
    #expect(small.left == 1 && large.left == 1)
    // Each pass looked at the one source signalled for it (and, at most, the one it
    // performed before, until then): the same for 10,000 sources as for 100,000. Working out
    // a common mode's sources after each change, as the loop did before, looked at all of
    // them: 100 passes times 10,000 or 100,000.
    #expect(small.examined == large.examined)
    #expect(large.examined <= 2 * 100)
    // Ten times the sources, ten times the work: each change looks at one entry. A binary
    // search per removal made it about 12.5 times; a scan of the mode per change, 100 times.
    let ratio = Double(large.work) / Double(small.work)
    #expect(ratio < 10.5, "work \(small.work) for 10,000 sources, \(large.work) for 100,000")
  }

  /// Sources added in descending order each went before every source already in the mode:
  /// kept sorted, each add moved the whole mode (n²/2 entries for n sources). Unsorted, each
  /// costs one entry, and run order is still ascending when asked for.
  @Test func addingSourcesOfEverLowerOrderCostsOneEntryEach() {
    func addDescending(_ count: Int) -> (work: Int, ascending: Bool) {
      var table = LoopModeTable<CustomInputSource>()
      for order in stride(from: count, to: 0, by: -1) {
        table.insert(CustomInputSource(name: "s\(order)", order: order) {}, in: .default)
      }
      let orders = table.items(in: .default).map(\.order)
      return (table.work, orders == Array(1...count))
    }
    let small = addDescending(10_000)
    let large = addDescending(100_000)
    #expect(small.ascending && large.ascending)
    #expect(small.work == 10_000 && large.work == 100_000)
  }

  // Order is kept without a list of the mode's sources: lower orders first, ties by when
  // they were first signalled, a source in both a mode and the common modes once, a removed
  // one not at all.
  @Test func signalledSourcesRunByOrderThenFirstSignalAcrossTheModeAndTheCommonModes() throws {
    let names = try onNewThread("order") { loop -> [String] in
      let ran = GuardedState<[String]>([])
      func source(_ name: String, order: Int = 0) -> CustomInputSource {
        CustomInputSource(name: name, order: order) { ran.withLock { $0.append(name) } }
      }
      let late = source("late", order: 5)
      let early = source("early", order: -1)
      let first = source("first")
      let both = source("both")
      let gone = source("gone")
      let common = source("common")
      try loop.add(late, mode: .default)
      try loop.add(first, mode: .default)
      try loop.add(gone, mode: .default)
      try loop.add(common, mode: .common)
      try loop.add(both, mode: .common)
      try loop.add(both, mode: .default)
      try loop.add(early, mode: .default)
      for signalled in [late, common, gone, both, first, early] { signalled.signal() }
      loop.remove(gone, mode: .default)
      try loop.run(mode: .default, timeout: .zero)
      return ran.withLock { $0 }
    }
    #expect(names == ["early", "common", "both", "first", "late"])
  }

  @Test func aSourceSignalledBeforeItWasAddedRunsInTheNextPass() throws {
    let ran = try onNewThread("early-signal") { loop -> Int in
      let count = Counter()
      let source = CustomInputSource(name: "early") { count.add() }
      source.signal()
      try loop.add(source, mode: .default)
      try loop.run(mode: .default, timeout: .zero)
      return count.value.withLock { $0 }
    }
    #expect(ran == 1)
  }

  @Test func aSourceSignalledForAnotherModeWaitsForARunInIt() throws {
    let counts = try onNewThread("other-mode") { loop -> [Int] in
      let count = Counter()
      let tracking = LoopMode("tracking")
      let waiting = CustomInputSource(name: "waiting") { count.add() }
      try loop.add(CustomInputSource(name: "keep") {}, mode: .default)
      try loop.add(waiting, mode: tracking)
      waiting.signal()
      var counts: [Int] = []
      for _ in 0..<3 { try loop.run(mode: .default, timeout: .zero) }
      counts.append(count.value.withLock { $0 })
      // The signal waits, unchanged, until a run in the source's own mode.
      try loop.run(mode: tracking, timeout: .zero)
      counts.append(count.value.withLock { $0 })
      // A mode that joins the common modes takes the `.common` sources' pending signals.
      let common = CustomInputSource(name: "common") { count.add() }
      try loop.add(common, mode: .common)
      common.signal()
      try loop.run(mode: tracking, timeout: .zero)
      counts.append(count.value.withLock { $0 })
      loop.addCommonMode(tracking)
      try loop.run(mode: tracking, timeout: .zero)
      counts.append(count.value.withLock { $0 })
      return counts
    }
    #expect(counts == [0, 1, 1, 2])
  }

  @Test func aSignalledSourceRemovedFromAnIdleLoopIsReleasedAtOnce() throws {
    let released = try onNewThread("release") { loop -> Bool in
      weak var weakSource: CustomInputSource?
      do {
        let source = CustomInputSource(name: "dropped") {}
        weakSource = source
        try loop.add(source, mode: .default)
        source.signal()
        loop.remove(source, mode: .default)
      }
      return weakSource == nil
    }
    #expect(released)
  }

  @Test func aSourceThatSignalsItselfFromItsCalloutKeepsOneEntry() throws {
    let (performed, examined) = try onNewThread("self-signal") { loop -> (Int, Int) in
      let count = Counter()
      let holder = GuardedState<CustomInputSource?>(nil)
      let source = CustomInputSource(name: "again") {
        count.add()
        holder.withLock { $0 }?.signal()
      }
      holder.withLock { $0 = source }
      try loop.add(source, mode: .default)
      source.signal()
      let before = loop.signalInbox.examined
      for _ in 0..<200 { try loop.run(mode: .default, timeout: .zero) }
      holder.withLock { $0 = nil }
      return (count.value.withLock { $0 }, loop.signalInbox.examined - before)
    }
    #expect(performed == 200)
    // One entry looked at per pass: a source signalled again is not added twice.
    #expect(examined == 200)
  }
}
