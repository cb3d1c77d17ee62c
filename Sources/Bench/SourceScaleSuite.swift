import CoreFoundation
import Foundation
import RunLoopCore

/// Many custom sources in the common modes: the cost of adding and removing them, and of a
/// pass right after a change (one source added to `.common` and removed again, each change
/// followed by a zero-timeout pass in the default mode, so every pass follows a change), and
/// of adding them with each source's order lower than the last one's.
let sourceScaleSuite = Suite(name: "source-scale") { options, report in
  let counts = options.quick ? [10_000] : [10_000, 100_000]
  for count in counts {
    let changes = options.quick ? 200 : 1000
    let ours = try ourSourceScale(count: count, changes: changes)
    let cf = try cfSourceScale(count: count, changes: changes)
    report.add(
      ResultRow(
        suite: "source scale", metric: "\(count) in .common: change + pass", unit: "us",
        ours: ours.perChange * 1e6, cf: cf.perChange * 1e6, floor: nil,
        advantage: cf.perChange / ours.perChange, target: "report", pass: nil))
    report.add(
      ResultRow(
        suite: "source scale", metric: "\(count) in .common: add all", unit: "ms",
        ours: ours.addAll * 1000, cf: cf.addAll * 1000, floor: nil,
        advantage: cf.addAll / ours.addAll, target: "report", pass: nil))
    report.add(
      ResultRow(
        suite: "source scale", metric: "\(count) in .common: remove all", unit: "ms",
        ours: ours.removeAll * 1000, cf: cf.removeAll * 1000, floor: nil,
        advantage: cf.removeAll / ours.removeAll, target: "report", pass: nil))
    let oursDescending = try ourSourceScale(count: count, changes: 1, descending: true)
    let cfDescending = try cfSourceScale(count: count, changes: 1, descending: true)
    report.add(
      ResultRow(
        suite: "source scale", metric: "\(count) in .common, orders descending: add all",
        unit: "ms", ours: oursDescending.addAll * 1000, cf: cfDescending.addAll * 1000, floor: nil,
        advantage: cfDescending.addAll / oursDescending.addAll, target: "report", pass: nil))
  }
}

/// Seconds to add `count` sources, per change-and-pass after that, and to remove them all.
struct SourceScaleResult {
  var addAll: Double
  var perChange: Double
  var removeAll: Double
}

/// With `descending`, each source's order is lower than the one added before it.
func ourSourceScale(count: Int, changes: Int, descending: Bool = false) throws
  -> SourceScaleResult
{
  try onFreshThread {
    let loop = EventRunLoop.current
    let sources = (0..<count).map {
      CustomInputSource(name: "s\($0)", order: descending ? count - $0 : 0) {}
    }
    var start = nanosNow()
    for source in sources { try loop.add(source, mode: .common) }
    let addAll = seconds(since: start)
    let extra = CustomInputSource(name: "extra") {}
    try loop.run(mode: .default, timeout: .zero)
    start = nanosNow()
    for _ in 0..<changes {
      try loop.add(extra, mode: .common)
      try loop.run(mode: .default, timeout: .zero)
      loop.remove(extra, mode: .common)
      try loop.run(mode: .default, timeout: .zero)
    }
    let perChange = seconds(since: start) / Double(2 * changes)
    start = nanosNow()
    for source in sources { loop.remove(source, mode: .common) }
    return SourceScaleResult(
      addAll: addAll, perChange: perChange, removeAll: seconds(since: start))
  }
}

/// With `descending`, each source's order is lower than the one added before it.
func cfSourceScale(count: Int, changes: Int, descending: Bool = false) throws
  -> SourceScaleResult
{
  try onFreshThread {
    let loop = CFRunLoopGetCurrent()
    let sources = (0..<count).map { makeCFSource(order: descending ? count - $0 : 0) {} }
    var start = nanosNow()
    for source in sources { CFRunLoopAddSource(loop, source, kCFRunLoopCommonModes) }
    let addAll = seconds(since: start)
    let extra = makeCFSource {}
    _ = CFRunLoopRunInMode(cfDefaultMode, 0, false)
    start = nanosNow()
    for _ in 0..<changes {
      CFRunLoopAddSource(loop, extra, kCFRunLoopCommonModes)
      _ = CFRunLoopRunInMode(cfDefaultMode, 0, false)
      CFRunLoopRemoveSource(loop, extra, kCFRunLoopCommonModes)
      _ = CFRunLoopRunInMode(cfDefaultMode, 0, false)
    }
    let perChange = seconds(since: start) / Double(2 * changes)
    start = nanosNow()
    for source in sources { CFRunLoopRemoveSource(loop, source, kCFRunLoopCommonModes) }
    return SourceScaleResult(
      addAll: addAll, perChange: perChange, removeAll: seconds(since: start))
  }
}
