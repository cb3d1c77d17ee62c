import Foundation
import FoundationXML
import Testing

@Suite("runloop-demo trace")
struct TraceCommandTests {
  @Test func exportAndTimelineOfARealRunProduceValidFiles() throws {
    let directory = try scratchDirectory("trace")
    let run = try runDemo(["run", "--duration", "1.2", "--no-journal"], directory: directory)
    #expect(run.status == 0)
    let log = directory + "/runloop-trace.jsonl"

    let summary = try runDemo(["trace", "summary", log])
    #expect(summary.status == 0)
    #expect(summary.stdout.contains("loop 1 ("))
    #expect(summary.stdout.contains("worker-1"))

    let chromePath = directory + "/trace.json"
    let export = try runDemo(["trace", "export", log, "--chrome", chromePath])
    #expect(export.status == 0, "\(export.stderr)")
    let document = try JSONSerialization.jsonObject(
      with: Data(contentsOf: URL(fileURLWithPath: chromePath)))
    let events = try #require((document as? [String: Any])?["traceEvents"] as? [[String: Any]])
    #expect(!events.isEmpty)
    let begins = events.filter { $0["ph"] as? String == "B" }.count
    let ends = events.filter { $0["ph"] as? String == "E" }.count
    #expect(begins > 0 && begins == ends)
    #expect(
      events.contains { $0["ph"] as? String == "X" && $0["name"] as? String == "heartbeat" }
        || events.contains { ($0["name"] as? String)?.contains("heartbeat") == true })

    let svgPath = directory + "/timeline.svg"
    let timeline = try runDemo(["trace", "timeline", log, "--svg", svgPath])
    #expect(timeline.status == 0, "\(timeline.stderr)")
    let svg = try Data(contentsOf: URL(fileURLWithPath: svgPath))
    let parser = XMLParser(data: svg)
    let delegate = ElementCounter()
    parser.delegate = delegate
    #expect(parser.parse(), "not well-formed XML: \(String(describing: parser.parserError))")
    #expect(delegate.root == "svg")
    #expect(delegate.counts["rect", default: 0] > 3)
  }
}

final class ElementCounter: NSObject, XMLParserDelegate {
  var root: String?
  var counts: [String: Int] = [:]

  func parser(
    _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
    qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
  ) {
    if root == nil { root = elementName }
    counts[elementName, default: 0] += 1
  }
}
