import RunLoopCore
import RunLoopTestSupport
import Testing

/// The enqueue path of a loop's executor allocates nothing of its own: counted in a child
/// process that interposes malloc (`RunLoopAllocationHelper`, Tests/AllocationHelper).
@Suite("Loops as executors: allocations")
struct ExecutorAllocationTests {
  @Test func actorHopsBetweenLoopsAllocateNoMoreThanABareExecutorsHops() throws {
    let helper = try HelperProcess(["10000"], executable: "RunLoopAllocationHelper")
    let line = helper.readLine(timeout: .seconds(60)) ?? ""
    #expect(helper.waitForExit(timeout: .seconds(30)) == 0)
    // "hops:10000 loops:<n> bare:<m>"
    var counts: [String: Int] = [:]
    for field in line.split(separator: " ") {
      let parts = field.split(separator: ":")
      if parts.count == 2, let value = Int(parts[1]) { counts[String(parts[0])] = value }
    }
    let loops = try #require(counts["loops"], "no count in \(line)")
    let bare = try #require(counts["bare"], "no count in \(line)")
    #expect(counts["hops"] == 10_000)
    // 10,000 hops are 20,000 jobs; the runtime allocates the same in both pairs (here: a
    // couple for the count readings themselves), so any per-job cost would show by
    // thousands.
    #expect(loops <= bare + 10, "\(line)")
  }
}
