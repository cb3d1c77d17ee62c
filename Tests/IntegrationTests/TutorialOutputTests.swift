import Foundation
import Testing

/// The tutorial shows what each step prints (an `Output` listing after the step's code); each
/// step, run, prints that. A shown output with no "..." line must match line for line; "..." stands for lines that vary from run to run,
/// and the other lines must then appear in the shown order.
@Suite("Tutorial: what each step prints")
struct TutorialOutputTests {
  static let tutorial = SnippetCheckTests.catalog.appendingPathComponent(
    "Tutorials/BuildATracedWorkerService.tutorial")
  static let resources = SnippetCheckTests.catalog.appendingPathComponent("Resources/Tutorial")

  /// The output the tutorial shows for step `step`: a file of the catalog, named in a step
  /// right after the step's code.
  static func shownOutput(step: Int) throws -> [String] {
    let name = "worker-service-\(step)-output.txt"
    let text = try String(contentsOf: resources.appendingPathComponent(name), encoding: .utf8)
    return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
      .filter { !$0.isEmpty }
  }

  /// Whether `output` is what `shown` says: equal, or, with "..." lines, the other lines in
  /// order.
  static func matches(_ output: [String], _ shown: [String]) -> Bool {
    guard shown.contains("...") else { return output == shown }
    return TutorialStepTests.inOrder(shown.filter { $0 != "..." }, in: output)
  }

  @Test func everyStepShowsWhatItPrintsRightAfterItsCode() throws {
    let text = try String(contentsOf: Self.tutorial, encoding: .utf8)
    for step in 1...9 {
      let code = try #require(text.range(of: "file: \"worker-service-\(step).swift\")"))
      let output = try #require(text.range(of: "file: \"worker-service-\(step)-output.txt\")"))
      let between = text[code.upperBound..<output.lowerBound]
      #expect(code.upperBound < output.lowerBound && !between.contains("file: \""), "step \(step)")
    }
  }

  @Test(arguments: 1...9)
  func theStepPrintsWhatTheTutorialShows(step: Int) throws {
    let shown = try Self.shownOutput(step: step)
    let (lines, _) = try TutorialStepTests.run(step: step)
    #expect(Self.matches(lines, shown), "step \(step) printed:\n\(lines.joined(separator: "\n"))")
  }

  /// The first section's package: it depends on this repository by path and names products
  /// this package has; its main.swift calls the first step.
  @Test func thePackageOfTheFirstSectionNamesThisPackagesProducts() throws {
    let manifest = try String(
      contentsOf: Self.resources.appendingPathComponent("worker-service-package.swift"),
      encoding: .utf8)
    let ours = try String(
      contentsOf: SnippetCheckTests.docs.deletingLastPathComponent()
        .appendingPathComponent("Package.swift"), encoding: .utf8)
    #expect(manifest.contains(".package(path: \"../swift-runloop\")"))
    #expect(ours.contains("name: \"swift-runloop\""))
    let products = manifest.components(separatedBy: ".product(name: \"").dropFirst().map {
      String($0.prefix { $0 != "\"" })
    }
    #expect(products.count >= 5, "\(products)")
    for product in products {
      #expect(ours.contains(".library(name: \"\(product)\""), "no product \(product) here")
    }
    let main = try String(
      contentsOf: Self.resources.appendingPathComponent("worker-service-main.swift"),
      encoding: .utf8)
    #expect(main.contains("try workerServiceStep1()"))
  }
}
