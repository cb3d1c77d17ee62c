import Foundation
import Testing

/// Ties the articles to compiled code: each ```swift block of a checked article (in the DocC
/// catalog Docs/RunLoopGuide.docc) must appear, verbatim (after removing common indentation
/// and the imports it shows, which its file must have), inside a `// snippet:` region of a
/// file in Docs/Snippets, which the RunLoopGuide target compiles.
@Suite("Documentation snippets compile")
struct SnippetCheckTests {
  static let checkedArticles = [
    "AnatomyOfARunLoop.md", "RunLoopModes.md", "InputSources.md", "SequenceOfEvents.md",
    "WhenToUseARunLoop.md", "UsingRunLoopObjects.md", "ThreadManagement.md", "Performance.md",
    "RunLoopsAndSwiftConcurrency.md", "RunLoopObservers.md", "PortBasedSources.md",
    "TracingARunLoop.md",
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
    let regions = try Self.snippetRegions() + Self.integrationRegions()
    for block in blocks {
      let (imports, code) = Self.splitImports(block)
      let region = regions.first { $0.text.contains(code) }
      #expect(region != nil, "\(article): this block is not in Docs/Snippets:\n\(block)")
      if let region {
        let missing = imports.filter { !region.imports.contains($0) }
        #expect(missing.isEmpty, "\(article): \(region.file) does not import \(missing)")
      }
    }
  }

  /// A block's leading `import` lines (the modules they name) and the code after them. An
  /// article may show the imports a block needs; the snippet file holds them at its top.
  static func splitImports(_ block: String) -> (imports: [String], code: String) {
    var lines = block.components(separatedBy: "\n")[...]
    var imports: [String] = []
    while let first = lines.first, first.hasPrefix("import ") || (!imports.isEmpty && first.isEmpty)
    {
      if let module = first.split(separator: " ").dropFirst().first {
        imports.append(String(module))
      }
      lines = lines.dropFirst()
    }
    return (imports, lines.joined(separator: "\n"))
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

  /// A marked region of a file in Docs/Snippets: its name, its file, its text (dedented) and
  /// the modules its file imports.
  struct Region {
    let name: String
    let file: String
    let text: String
    let imports: [String]
  }

  /// The marked regions of every file in Docs/Snippets.
  static func snippetRegions() throws -> [Region] {
    try regions(in: docs.appendingPathComponent("Snippets"))
  }

  /// The marked regions of the OTLP package's demo (Integrations/OTLP), which that package
  /// compiles: an article may show them, but they are not run as snippets (SnippetRunTests).
  static func integrationRegions() throws -> [Region] {
    try regions(
      in: docs.deletingLastPathComponent().appendingPathComponent(
        "Integrations/OTLP/Sources/OTLPDemo"))
  }

  static func regions(in folder: URL) throws -> [Region] {
    var regions: [Region] = []
    for file in try FileManager.default.contentsOfDirectory(atPath: folder.path)
    where file.hasSuffix(".swift") {
      let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
      let lines = text.components(separatedBy: "\n")
      let imports = lines.filter { $0.hasPrefix("import ") }.compactMap {
        $0.split(separator: " ").dropFirst().first.map(String.init)
      }
      var current: (name: String, lines: [String])?
      for line in lines {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("// snippet:") {
          current = (
            String(trimmed.dropFirst("// snippet:".count)).trimmingCharacters(in: .whitespaces), []
          )
        } else if trimmed == "// end snippet" {
          if let region = current {
            regions.append(
              Region(name: region.name, file: file, text: dedent(region.lines), imports: imports))
          }
          current = nil
        } else if current != nil {
          current!.lines.append(line)
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
