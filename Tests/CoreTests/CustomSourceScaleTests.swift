import RunLoopTestSupport
import Testing

@testable import RunLoopCore

/// Custom sources by the hundred thousand: adding costs constant work per source and
/// invalidating logarithmic work, amortized, and resolving the common modes linear work. The table counts the entries its
/// changes and resolutions look at or move (`LoopModeTable.work`), so the test compares
/// counts, not times.
@Suite("Custom sources at scale")
struct CustomSourceScaleTests {
  /// Adds `count` sources to the common modes, resolves the default mode once, invalidates
  /// them all, resolves again; returns the table's work and the two resolutions' sizes.
  private func addAndInvalidate(_ count: Int) throws -> (work: Int, resolved: Int, left: Int) {
    try onNewThread("scale") { loop in
      let sources = (0..<count).map { CustomInputSource(name: "s\($0)") {} }
      for source in sources { try loop.add(source, mode: .common) }
      // One own source of the default mode, so resolving merges two lists.
      try loop.add(CustomInputSource(name: "own") {}, mode: .default)
      let resolved = loop.state.withLock { $0.sources(for: .default).count }
      for source in sources { source.invalidate() }
      return loop.state.withLock { state in
        (state.sources.work, resolved, state.sources(for: .default).count)
      }
    }
  }

  @Test func addingAndInvalidating100kSourcesCostsLinearWork() throws {
    let small = try addAndInvalidate(10_000)
    let large = try addAndInvalidate(100_000)
    #expect(small.resolved == 10_001 && large.resolved == 100_001)
    #expect(small.left == 1 && large.left == 1)
    // Ten times the sources: about 12.5 times the work when each change costs O(log n)
    // (a binary search finds a removed source's entry); a hundred times when each change
    // scans the mode, as the table did before.
    let ratio = Double(large.work) / Double(small.work)
    #expect(ratio < 20, "work \(small.work) for 10,000 sources, \(large.work) for 100,000")
  }

  // Order is kept through the table's shortcuts: lower orders first, ties by insertion,
  // a source in both a mode and the common modes once, removed ones gone.
  @Test func runOrderSurvivesAddsRemovesAndTheCommonMerge() throws {
    let names = try onNewThread("order") { loop -> [String] in
      let late = CustomInputSource(name: "late", order: 5) {}
      let early = CustomInputSource(name: "early", order: -1) {}
      let first = CustomInputSource(name: "first") {}
      let both = CustomInputSource(name: "both") {}
      let gone = CustomInputSource(name: "gone") {}
      let common = CustomInputSource(name: "common") {}
      try loop.add(late, mode: .default)
      try loop.add(first, mode: .default)
      try loop.add(gone, mode: .default)
      try loop.add(common, mode: .common)
      try loop.add(both, mode: .common)
      try loop.add(both, mode: .default)
      try loop.add(early, mode: .default)
      loop.remove(gone, mode: .default)
      return loop.state.withLock { $0.sources(for: .default).map(\.name) }
    }
    #expect(names == ["early", "first", "common", "both", "late"])
  }
}
