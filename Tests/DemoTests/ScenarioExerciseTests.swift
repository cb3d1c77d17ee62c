import Foundation
import Testing

/// `runloop-demo scenario NAME --predict`, run with answers piped to standard input: the
/// right order passes, a wrong one is graded with the loop's order and exits 3, and cut-off
/// or malformed input is refused with a message and its own exit status.
@Suite("runloop-demo scenario --predict", .serialized)
struct ScenarioExerciseTests {
  /// The right answers, read off the loop's sequence of events.
  static let answers = [
    "observers": "CDAB", "nested-runs": "CABD", "sync-async": "BCA", "custom-source": "DBCA",
    "ports": "CDBA",
  ]

  @Test(arguments: answers.keys.sorted())
  func theRightOrderIsGradedCorrectAfterTheRun(name: String) throws {
    let result = try runDemo(["scenario", name, "--predict"], input: Self.answers[name]! + "\n")
    #expect(result.exitedNormally && result.status == 0, "\(result.stdout)\n\(result.stderr)")
    let question = try #require(result.stdout.range(of: "Your answer"))
    let run = try #require(result.stdout.range(of: "\n== \(name): "))
    #expect(question.lowerBound < run.lowerBound, "the question comes before the run")
    #expect(result.stdout.contains("✓ your prediction held"))
    #expect(!result.stdout.contains("✗"))
  }

  @Test func aWrongOrderIsShownTheLoopsOrderAndExitsThree() throws {
    let result = try runDemo(["scenario", "sync-async", "--predict"], input: "a, b, c\n")
    #expect(result.status == 3, "\(result.stdout)\n\(result.stderr)")
    #expect(result.stdout.contains("you said:   A B C"))
    #expect(result.stdout.contains("the loop:   B C A"))
  }

  @Test func standardInputThatEndsBeforeAnAnswerIsRefusedWithSixtySix() throws {
    let result = try runDemo(["scenario", "observers", "--predict"], input: "")
    #expect(result.status == 66, "\(result.stdout)\n\(result.stderr)")
    #expect(result.stderr.contains("standard input ended before an answer"))
    #expect(!result.stdout.contains("== observers: Observers"), "it must not run")
  }

  @Test func anAnswerThatIsNotAnOrderOfTheLettersIsRefusedWithSixtyFive() throws {
    for answer in ["AAB", "AB", "ABCX", "ABCDE"] {
      let result = try runDemo(["scenario", "observers", "--predict"], input: answer + "\n")
      #expect(result.status == 65, "\(answer): \(result.stdout)\n\(result.stderr)")
      #expect(result.stderr.contains("is not an order of the letters ABCD"), "\(result.stderr)")
    }
  }

  @Test func aScenarioWithoutAnExerciseSaysWhichHaveOne() throws {
    let result = try runDemo(["scenario", "queues", "--predict"], input: "A\n")
    #expect(result.status == 64, "\(result.stderr)")
    #expect(result.stderr.contains("observers") && result.stderr.contains("sync-async"))
    #expect(result.stderr.contains("custom-source") && result.stderr.contains("ports"))
  }
}

/// Docs/README.md's concept table: a picture and an exercise column, every cell filled, and
/// every picture and `--predict` exercise it names exists.
@Suite("The concept table of Docs/README.md")
struct ConceptTableTests {
  static let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Docs")

  static func rows() throws -> [[String]] {
    let text = try String(
      contentsOf: docs.appendingPathComponent("README.md"), encoding: .utf8)
    let table = text.components(separatedBy: "\n").filter { $0.hasPrefix("| ") }
      .drop { !$0.hasPrefix("| Concept (seed) |") }
    return table.map {
      $0.trimmingCharacters(in: CharacterSet(charactersIn: "| ")).components(separatedBy: " | ")
    }
  }

  @Test func everyConceptHasAPictureAndAnExerciseCellAndTheyExist() throws {
    let rows = try Self.rows()
    #expect(
      rows.first == [
        "Concept (seed)", "Article, section", "Scenario", "Picture", "Exercise", "Test",
      ])
    let concepts = rows.dropFirst(2)
    #expect(concepts.count >= 20)
    for row in concepts {
      #expect(row.count == 6 && row.allSatisfy { !$0.isEmpty }, "\(row)")
      guard row.count == 6 else { continue }
      for picture in row[3].components(separatedBy: "`").filter({ $0.hasSuffix(".svg") }) {
        let path = Self.docs.appendingPathComponent("RunLoopGuide.docc/Resources/" + picture).path
        #expect(FileManager.default.fileExists(atPath: path), "\(row[0]): no \(picture)")
      }
      for exercise in row[4].components(separatedBy: "`").filter({ $0.hasSuffix(" --predict") }) {
        let name = exercise.split(separator: " ")[1]
        // A scenario with an exercise asks, then finds standard input empty (66).
        let result = try runDemo(["scenario", String(name), "--predict"], input: "")
        #expect(result.status == 66, "\(row[0]): '\(name)' has no exercise")
      }
    }
  }
}
