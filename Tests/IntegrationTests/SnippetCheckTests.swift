import Foundation
import Testing

/// Ties the articles to compiled code: each ```swift block of a checked article (in the DocC
/// catalog Docs/RunLoopGuide.docc) must appear, verbatim (after removing common indentation),
/// inside a `// snippet:` region of a file in Docs/Snippets, which the RunLoopGuide target
/// compiles.
@Suite("Documentation snippets compile")
struct SnippetCheckTests {
  static let checkedArticles = [
    "AnatomyOfARunLoop.md", "RunLoopModes.md", "InputSources.md", "SequenceOfEvents.md",
    "WhenToUseARunLoop.md", "UsingRunLoopObjects.md", "ThreadManagement.md", "Performance.md",
    "RunLoopsAndSwiftConcurrency.md",
  ]

  static let docs: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Docs")

  /// The DocC catalog that holds the articles.
  static let catalog: URL = docs.appendingPathComponent("RunLoopGuide.docc")

  @Test(arguments: checkedArticles)
  func everySwiftBlockOfTheArticleIsACompiledSnippet(article: String) throws {
    let text = try String(contentsOf: Self.catalog.appendingPathComponent(article), encoding: .utf8)
    let blocks = Self.swiftBlocks(in: text)
    #expect(!blocks.isEmpty, "\(article) has no Swift code block")
    let regions = try Self.snippetRegions()
    for block in blocks {
      #expect(
        regions.contains { $0.contains(block) },
        "\(article): this block is not in Docs/Snippets:\n\(block)")
    }
  }

  /// The ```swift blocks of a Markdown text, dedented.
  static func swiftBlocks(in text: String) -> [String] {
    blocks(in: text, language: "swift")
  }

  /// The fenced blocks of a Markdown text in `language` (```text, ```sh), dedented.
  static func blocks(in text: String, language: String) -> [String] {
    var blocks: [String] = []
    var current: [String]?
    for line in text.components(separatedBy: "\n") {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if current == nil, trimmed == "```" + language {
        current = []
      } else if current != nil, trimmed == "```" {
        blocks.append(dedent(current!))
        current = nil
      } else if current != nil {
        current!.append(line)
      }
    }
    return blocks
  }

  /// The marked regions of every file in Docs/Snippets, dedented.
  static func snippetRegions() throws -> [String] {
    let folder = docs.appendingPathComponent("Snippets")
    var regions: [String] = []
    for file in try FileManager.default.contentsOfDirectory(atPath: folder.path)
    where file.hasSuffix(".swift") {
      let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
      var current: [String]?
      for line in text.components(separatedBy: "\n") {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("// snippet:") {
          current = []
        } else if trimmed == "// end snippet" {
          if let lines = current { regions.append(dedent(lines)) }
          current = nil
        } else if current != nil {
          current!.append(line)
        }
      }
    }
    return regions
  }

  static func dedent(_ lines: [String]) -> String {
    let indents = lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
      .map { $0.prefix { $0 == " " }.count }
    let cut = indents.min() ?? 0
    return lines.map { $0.count >= cut ? String($0.dropFirst(cut)) : "" }
      .joined(separator: "\n").trimmingCharacters(in: .newlines)
  }
}
