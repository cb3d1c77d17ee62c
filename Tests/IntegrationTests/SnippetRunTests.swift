import Foundation
import Testing

/// Runs the articles' code: each region of Docs/Snippets is run as a process of its own by
/// `runloop-snippets NAME` (or says why it is not), and where an article shows what a block
/// prints (a ```text block right after it, or after a paragraph ending "prints:"), the run
/// must print exactly that.
@Suite("Documentation snippets run", .serialized)
struct SnippetRunTests {
  static let runner = GuideProgram("runloop-snippets")

  /// The name of every region of Docs/Snippets.
  static let regionNames: [String] = (try? SnippetCheckTests.snippetRegions().map(\.name)) ?? []

  /// What `runloop-snippets --list` says of each region.
  static func coverage() throws -> [String: String] {
    let (status, output) = try runner.run(["--list"])
    #expect(status == 0)
    var coverage: [String: String] = [:]
    for line in output.split(separator: "\n") {
      let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
      if parts.count == 2 { coverage[parts[0]] = parts[1] }
    }
    return coverage
  }

  /// The output an article shows for each Swift block that has one, by the block's code.
  static func shownOutputs() throws -> [String: String] {
    var outputs: [String: String] = [:]
    for article in SnippetCheckTests.checkedArticles {
      let text = try String(
        contentsOf: SnippetCheckTests.catalog.appendingPathComponent(article), encoding: .utf8)
      for (code, output) in blocksWithOutput(in: text) {
        if let output { outputs[SnippetCheckTests.splitImports(code).code] = output }
      }
    }
    return outputs
  }

  /// The Swift blocks of a Markdown text, each with the output block that follows it.
  static func blocksWithOutput(in text: String) -> [(code: String, output: String?)] {
    let lines = text.components(separatedBy: "\n")
    var result: [(code: String, output: String?)] = []
    var index = 0
    func fenced(from start: Int) -> (body: [String], end: Int) {
      var end = start + 1
      while end < lines.count, lines[end].trimmingCharacters(in: .whitespaces) != "```" {
        end += 1
      }
      return (Array(lines[(start + 1)..<min(end, lines.count)]), end)
    }
    while index < lines.count {
      guard lines[index].trimmingCharacters(in: .whitespaces) == "```swift" else {
        index += 1
        continue
      }
      let (body, end) = fenced(from: index)
      var next = end + 1
      while next < lines.count, lines[next].isEmpty { next += 1 }
      if next < lines.count, !lines[next].hasPrefix("```") {
        // A paragraph that ends "prints:" may stand between the code and its output.
        var last = next
        while last + 1 < lines.count, !lines[last + 1].isEmpty { last += 1 }
        next = lines[last].hasSuffix("prints:") ? last + 2 : lines.count
        while next < lines.count, lines[next].isEmpty { next += 1 }
      }
      var output: String?
      if next < lines.count, lines[next].trimmingCharacters(in: .whitespaces) == "```text" {
        output = SnippetCheckTests.dedent(fenced(from: next).body)
      }
      result.append((SnippetCheckTests.dedent(body), output))
      index = end + 1
    }
    return result
  }

  @Test func everyRegionIsRunOrSaysWhyNot() throws {
    let coverage = try Self.coverage()
    #expect(Set(coverage.keys) == Set(Self.regionNames), "\(coverage.keys.sorted())")
    for (name, how) in coverage {
      if how.hasPrefix("run by ") {
        #expect(coverage[String(how.dropFirst("run by ".count))] == "runs", "\(name): \(how)")
      } else if how != "runs" {
        #expect(how.hasPrefix("compiled only: ") && how.count > 30, "\(name): \(how)")
      }
    }
  }

  @Test(arguments: regionNames)
  func theRegionRunsAndPrintsWhatItsArticleShows(region: String) throws {
    let how = try #require(try Self.coverage()[region], "runloop-snippets does not list \(region)")
    guard how == "runs" else {
      // Covered by everyRegionIsRunOrSaysWhyNot: run with another region, or why not.
      #expect(how.hasPrefix("run by ") || how.hasPrefix("compiled only: "))
      return
    }
    let (status, output) = try Self.runner.run([region], timeout: .seconds(60))
    #expect(status == 0, "\(region) exited \(status):\n\(output)")
    let code = try #require(try SnippetCheckTests.snippetRegions().first { $0.name == region })
    let shown = try Self.shownOutputs().first { code.text.contains($0.key) }?.value
    if let shown {
      #expect(output.trimmingCharacters(in: .newlines) == shown, "\(region) printed:\n\(output)")
    }
  }
}
