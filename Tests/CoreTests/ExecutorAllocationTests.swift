import Glibc
import RunLoopCore
import RunLoopTestSupport
import Testing

/// Whether this test process runs under ThreadSanitizer (its runtime is linked in). The
/// helper it builds then is instrumented too, and an instrumented process cannot have its
/// malloc replaced by a counter: ThreadSanitizer's runtime owns the allocator.
private let underThreadSanitizer =
  dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

/// Runs `RunLoopAllocationHelper` with `arguments`; returns its line of `name:count` fields
/// and the counts by name.
private func allocationCounts(_ arguments: [String]) throws -> (String, [String: Int]) {
  let helper = try HelperProcess(arguments, executable: "RunLoopAllocationHelper")
  let line = helper.readLine(timeout: .seconds(60)) ?? ""
  #expect(helper.waitForExit(timeout: .seconds(30)) == 0)
  var counts: [String: Int] = [:]
  for field in line.split(separator: " ") {
    let parts = field.split(separator: ":")
    if parts.count == 2, let value = Int(parts[1]) { counts[String(parts[0])] = value }
  }
  return (line, counts)
}

/// The enqueue path of a loop's executor allocates nothing of its own: counted in a child
/// process that interposes malloc (`RunLoopAllocationHelper`, Tests/AllocationHelper).
@Suite("Loops as executors: allocations")
struct ExecutorAllocationTests {
  // The count is a property of the code, not of its threads: the plain run checks it.
  @Test(.enabled(if: !underThreadSanitizer, "malloc cannot be counted under ThreadSanitizer"))
  func enqueueingJobsOnALoopAllocatesNoMoreThanOnABareExecutor() throws {
    // "hops:10000 bare-to-loop:<n> bare-to-bare:<m> loop-thread:<k>"
    let (line, counts) = try allocationCounts(["10000"])
    let toLoop = try #require(counts["bare-to-loop"], "no count in \(line)")
    let toBare = try #require(counts["bare-to-bare"], "no count in \(line)")
    #expect(counts["hops"] == 10_000)
    // The counted thread runs the runtime's part of 10,000 hops and makes 10,000 enqueues,
    // on the loop in one rally, on a bare executor in the other: a cost per enqueue would
    // show by thousands. (The few allocations of both are the count readings themselves.)
    #expect(toLoop <= toBare + 10, "\(line)")
  }
}

/// Work queued for a loop records its cause only while call-outs are traced: counted in a
/// child process (no other test's instruments there), on the queueing thread.
@Suite("Causes: allocations")
struct CauseAllocationTests {
  @Test(.enabled(if: !underThreadSanitizer, "malloc cannot be counted under ThreadSanitizer"))
  func untracedQueueingAllocatesNothingForCausesTracedOneBoxPerRequestNoneMorePerSignal() throws {
    let (line, counts) = try allocationCounts(["causes", "1000"])
    #expect(counts["requests"] == 1000)
    let untraced = try #require(counts["perform-untraced"], "no count in \(line)")
    let traced = try #require(counts["perform-traced"], "no count in \(line)")
    // Untraced: the request itself, one allocation each (its closure captures nothing).
    #expect(untraced <= 1000 + 10, "\(line)")
    // Traced: one more each, the box holding the cause.
    #expect(traced - untraced >= 1000 - 10 && traced - untraced <= 1000 + 10, "\(line)")
    // A traced signal allocates nothing more than an untraced one: its cause is kept in the
    // source.
    let signalUntraced = try #require(counts["signal-untraced"], "no count in \(line)")
    let signalTraced = try #require(counts["signal-traced"], "no count in \(line)")
    #expect(signalTraced <= signalUntraced + 10, "\(line)")
  }
}
