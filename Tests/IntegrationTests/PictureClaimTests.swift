import Dispatch
import Foundation
import Glibc
import RunLoopCore
import RunLoopTimers
import Testing

/// What the articles say about their pictures and a few facts they state, held to the
/// pictures and to the running code.
@Suite("Claims about the pictures and the facts beside them")
struct PictureClaimTests {
  static let resources = SnippetCheckTests.catalog.appendingPathComponent("Resources")

  static func text(_ url: URL) throws -> String { try String(contentsOf: url, encoding: .utf8) }

  /// The span of time a timeline picture covers, from its title ("999.5 to 1001.1 ms").
  static func window(of svg: String) throws -> Double {
    let title = try #require(svg.range(of: "Run-loop timeline: "))
    let words = svg[title.upperBound...].prefix { $0 != "<" }.split(separator: " ")
    let from = try #require(Double(words[0]))
    let to = try #require(Double(words[2]))
    return to - from
  }

  /// The colours of a timeline's legend by what they stand for ("timer call-out": "#f5a623").
  static func legend(of svg: String) -> [String: String] {
    var legend: [String: String] = [:]
    for line in svg.components(separatedBy: "\n") where line.hasPrefix("<rect x=") {
      guard let fill = line.range(of: "fill=\""), let text = line.range(of: "<text ") else {
        continue
      }
      let colour = String(line[fill.upperBound...].prefix { $0 != "\"" })
      let label = line[text.upperBound...].drop { $0 != ">" }.dropFirst().prefix { $0 != "<" }
      legend[String(label)] = colour
    }
    return legend
  }

  @Test func theReadmesZoomedPictureIsTheLengthItsAltTextSays() throws {
    let svg = try Self.text(Self.resources.appendingPathComponent("demo-timeline-heartbeat.svg"))
    let readme = try Self.text(
      SnippetCheckTests.docs.deletingLastPathComponent().appendingPathComponent("README.md"))
    let window = try Self.window(of: svg)
    let alt = "![\((window * 10).rounded() / 10) milliseconds around a heartbeat]"
    #expect(readme.contains(alt), "the picture covers \(window) ms")
  }

  @Test func theDemoArticleNamesTheColoursThePictureShows() throws {
    let svg = try Self.text(Self.resources.appendingPathComponent("demo-timeline.svg"))
    let article = try Self.text(SnippetCheckTests.catalog.appendingPathComponent("Demo.md"))
    let paragraph = try #require(
      article.components(separatedBy: "\n\n").first {
        $0.hasPrefix("The timeline of the 2.2 s run above")
      })
    let names = [
      "#4a90d9": "blue", "#ececec": "grey", "#fff0a8": "yellow", "#f5a623": "orange",
      "#b07cc6": "purple", "#50c8c8": "teal", "#7ed321": "green",
    ]
    let legend = Self.legend(of: svg)
    #expect(legend.count >= 7, "\(legend)")
    for (label, colour) in legend where !label.hasPrefix("stall") {
      let name = try #require(names[colour], "no name for \(label)'s colour \(colour)")
      #expect(paragraph.contains(name), "the picture shows \(label) in \(name)")
    }
    #expect(!paragraph.contains("orange bar"), "no call-out is drawn as a long bar")
    // The one long call-out, the first heartbeat, holds the nested run and is drawn under it.
    let callout = try #require(
      svg.components(separatedBy: "\n").first { $0.contains("<title>timer: heartbeat") })
    let nested = try #require(
      svg.components(separatedBy: "\n").first { $0.contains("<title>run critical (depth 2)") })
    let calloutX = try #require(Self.attribute("x", of: callout))
    let nestedX = try #require(Self.attribute("x", of: nested))
    #expect(
      abs(calloutX - nestedX) < 1
        && svg.range(of: nested)!.lowerBound > svg.range(of: callout)!.lowerBound)
  }

  static func attribute(_ name: String, of element: String) -> Double? {
    guard let start = element.range(of: " \(name)=\"") else { return nil }
    return Double(element[start.upperBound...].prefix { $0 != "\"" })
  }

  /// RunLoopsAndSwiftConcurrency.md: a delayed perform is taken back with `cancel()`, as a
  /// `DispatchWorkItem` given to `asyncAfter` is; neither runs.
  @Test func aCancelledDelayedPerformAndACancelledAsyncAfterWorkItemNeverRun() throws {
    let ran = GuardedState<[String]>([])
    let item = DispatchWorkItem { ran.withLock { $0.append("work item") } }
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50), execute: item)
    item.cancel()
    let loop = EventRunLoop.current
    let autosave = loop.perform(after: .milliseconds(50), inModes: [.default]) {
      ran.withLock { $0.append("autosave") }
    }
    autosave.cancel()
    let marker = try LoopTimer(fireAt: .now + .milliseconds(200)) { _ in }
    try loop.add(marker, mode: .default)
    _ = try loop.run(mode: .default, timeout: .seconds(5))
    #expect(ran.withLock { $0 }.isEmpty)
    #expect(item.isCancelled)
  }

  /// ThreadManagement.md, Table 2-1: a `task_struct` is "about 6 KB, by kernel".
  @Test(.enabled(if: FileManager.default.isReadableFile(atPath: "/proc/slabinfo")))
  func aTaskStructIsAboutSixKilobytes() throws {
    // /proc files report a size of 0: read to the end rather than by size.
    let file = try #require(FileHandle(forReadingAtPath: "/proc/slabinfo"))
    let slabinfo = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
    let row = try #require(
      slabinfo.components(separatedBy: "\n").first { $0.hasPrefix("task_struct ") })
    let columns = row.split(separator: " ")
    let objectSize = try #require(Int(columns[3]))
    #expect((5_000...7_000).contains(objectSize), "task_struct is \(objectSize) bytes here")
  }
}
