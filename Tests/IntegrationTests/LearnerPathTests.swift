import Foundation
import Testing

/// The path from zero: the README's first screen sends a newcomer to "Start here", the guide
/// lists its articles in the order a newcomer needs them, and in each concept article the
/// lesson comes before the implementation detail, which sits under "Under the hood".
@Suite("The learner's path through the guide")
struct LearnerPathTests {
  static let root = SnippetCheckTests.docs.deletingLastPathComponent()

  /// The articles in the order a newcomer reads them; threads come after, as reference.
  static let order = [
    "StartHere", "WorkerServiceTutorials", "AnatomyOfARunLoop", "SequenceOfEvents",
    "RunLoopModes", "InputSources", "PortBasedSources", "TimerSources", "RunLoopObservers",
    "WhenToUseARunLoop", "UsingRunLoopObjects", "RunLoopsAndSwiftConcurrency",
    "ThreadManagement",
  ]

  /// The concept articles, each with its lesson first and "Under the hood" after it.
  static let conceptArticles = [
    "AnatomyOfARunLoop", "SequenceOfEvents", "RunLoopModes", "InputSources",
    "PortBasedSources", "TimerSources", "RunLoopObservers", "RunLoopsAndSwiftConcurrency",
    "ThreadManagement",
  ]

  /// Headings that name implementation detail rather than the lesson.
  static func isDetail(_ heading: String) -> Bool {
    let title = heading.drop { $0 == "#" || $0 == " " }
    return (title.hasPrefix("Where") && title.contains("differ"))
      || ["How it is built", "How it works", "How it sleeps", "Inside the package"].contains {
        title.hasPrefix($0)
      }
  }

  @Test func theReadmeKeepsItsTwoCommandsFirstAndThenPointsToStartHere() throws {
    let text = try String(
      contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
    let lines = text.components(separatedBy: "\n")
    #expect(
      Array(lines.prefix(6)) == [
        "# swift-runloop", "", "```sh",
        "bash scripts/demo.sh    # run the demo service (installs what is missing, starts journald)",
        "bash scripts/test.sh    # run the whole test suite (the same command CI runs)", "```",
      ])
    // The first screen after the commands: the next paragraph.
    let next = lines.dropFirst(6).drop { $0.isEmpty }.prefix { !$0.isEmpty }.joined(separator: " ")
    #expect(next.contains("(Docs/RunLoopGuide.docc/StartHere.md)"), "\(next)")
  }

  @Test func theGuideListsItsArticlesInTheNewcomersOrder() throws {
    let text = try String(
      contentsOf: SnippetCheckTests.catalog.appendingPathComponent("RunLoopGuide.md"),
      encoding: .utf8)
    let listed = text.components(separatedBy: "\n").compactMap { line -> String? in
      guard line.hasPrefix("- <doc:"), line.hasSuffix(">") else { return nil }
      return String(line.dropFirst("- <doc:".count).dropLast())
    }
    #expect(Array(listed.prefix(Self.order.count)) == Self.order, "\(listed)")
    let readme = try String(
      contentsOf: SnippetCheckTests.docs.appendingPathComponent("README.md"), encoding: .utf8)
    let numbered = readme.components(separatedBy: "\n").compactMap { line -> String? in
      guard line.first?.isNumber == true, let open = line.range(of: "(RunLoopGuide.docc/")
      else { return nil }
      let rest = line[open.upperBound...]
      return rest.range(of: ".md)").map { String(rest[..<$0.lowerBound]) }
    }
    let articles = Self.order.filter { $0 != "StartHere" && $0 != "WorkerServiceTutorials" }
    #expect(Array(numbered.prefix(articles.count)) == articles, "\(numbered)")
  }

  @Test(arguments: conceptArticles)
  func theLessonComesFirstAndTheImplementationUnderItsOwnHeading(article: String) throws {
    let text = try String(
      contentsOf: SnippetCheckTests.catalog.appendingPathComponent(article + ".md"),
      encoding: .utf8)
    var inCode = false
    var headings: [String] = []
    for line in text.components(separatedBy: "\n") {
      if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { inCode.toggle() }
      if !inCode, line.hasPrefix("## ") || line.hasPrefix("### ") || line.hasPrefix("#### ") {
        headings.append(line)
      }
    }
    let hood = try #require(headings.firstIndex(of: "## Under the hood"), "\(headings)")
    #expect(hood > 0, "the article starts with its implementation")
    let early = headings[..<hood].filter(Self.isDetail)
    #expect(early.isEmpty, "implementation detail before 'Under the hood': \(early)")
    let late = headings[(hood + 1)...].filter { $0.hasPrefix("## ") && $0 != "## See Also" }
    #expect(late.isEmpty, "lessons after 'Under the hood': \(late)")
  }
}
