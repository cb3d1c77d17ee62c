import Foundation
import Testing

/// Every library product has a module page (the DocC catalog `NAME.docc` in its target's
/// folder) with an overview, a first example that is compiled code, and its main types.
@Suite("Module pages")
struct ModulePageTests {
  static let root = SnippetCheckTests.docs.deletingLastPathComponent()

  /// The library products of Package.swift.
  static let libraries: [String] = {
    let manifest =
      (try? String(
        contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)) ?? ""
    return manifest.components(separatedBy: ".library(name: \"").dropFirst().compactMap {
      $0.split(separator: "\"").first.map(String.init)
    }
  }()

  /// The page of `library`: `Sources/*/LIBRARY.docc/LIBRARY.md`.
  static func page(of library: String) -> URL? {
    let sources = root.appendingPathComponent("Sources")
    let folders = (try? FileManager.default.contentsOfDirectory(atPath: sources.path)) ?? []
    return folders.lazy.map {
      sources.appendingPathComponent("\($0)/\(library).docc/\(library).md")
    }.first { FileManager.default.fileExists(atPath: $0.path) }
  }

  @Test func thePackageHasLibrariesToCheck() {
    #expect(Self.libraries.count >= 10, "\(Self.libraries)")
    #expect(Self.libraries.contains("RunLoopCore") && Self.libraries.contains("RunLoopLifecycle"))
  }

  @Test(arguments: libraries)
  func theModulePageHasAnOverviewAndACompiledFirstExample(library: String) throws {
    let url = try #require(Self.page(of: library), "no Sources/*/\(library).docc/\(library).md")
    let text = try String(contentsOf: url, encoding: .utf8)
    #expect(text.hasPrefix("# ``\(library)``\n"))
    #expect(text.contains("\n## Overview\n"))
    let blocks = SnippetCheckTests.swiftBlocks(in: text)
    #expect(!blocks.isEmpty, "\(library)'s page has no first example")
    let regions = try SnippetCheckTests.snippetRegions()
    for block in blocks {
      let code = SnippetCheckTests.splitImports(block).code
      #expect(
        regions.contains { $0.text.contains(code) },
        "\(library)'s example is not in Docs/Snippets:\n\(block)")
    }
  }

  /// A module with public types lists them under Topics (DocC checks each link resolves).
  @Test(arguments: libraries)
  func theModulePageListsTheModulesPublicTypes(library: String) throws {
    let url = try #require(Self.page(of: library))
    let text = try String(contentsOf: url, encoding: .utf8)
    let folder = url.deletingLastPathComponent().deletingLastPathComponent()
    var types: [String] = []
    for file in try FileManager.default.contentsOfDirectory(atPath: folder.path)
    where file.hasSuffix(".swift") {
      let source = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
      for line in source.split(separator: "\n") {
        // Top-level declarations only: a nested type is listed on its parent's page.
        guard line.hasPrefix("public ") else { continue }
        let words = line.split(separator: " ")
        let kinds: Set<Substring> = ["class", "struct", "enum", "protocol", "actor"]
        let rest = words.dropFirst().drop { $0 == "final" }
        guard let kind = rest.first, kinds.contains(kind), rest.count >= 2 else { continue }
        types.append(String(rest.dropFirst().first!.prefix { $0.isLetter || $0.isNumber }))
      }
    }
    let missing = types.filter { !text.contains("- ``\($0)``") }
    #expect(missing.isEmpty, "\(library)'s page does not list \(missing) under Topics")
  }
}
