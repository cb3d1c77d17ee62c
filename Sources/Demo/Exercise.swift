/// A scenario as an exercise (`runloop-demo scenario NAME --predict`): the set-up is stated,
/// the learner puts a few of the events the scenario prints in the order they will happen,
/// then the scenario runs and its own event lines say which order was right.
struct Exercise: Sendable {
  /// One event the learner places: what it is, and the text of the scenario's event line
  /// that shows it happening (its first such line counts).
  struct Event: Sendable {
    let text: String
    let marker: String
  }

  /// What the scenario sets up, in a few lines.
  let setUp: [String]
  let question: String
  /// The events, in the order they are offered (letters A, B, ...): not the answer's order.
  let events: [Event]

  /// The letter of the event at `index`.
  static func letter(_ index: Int) -> Character {
    Character(UnicodeScalar(UInt8(ascii: "A") + UInt8(index)))
  }

  /// The learner's answer as event indices, or `nil` when it is not an order of every letter
  /// once (spaces and commas between letters are allowed; case does not matter).
  func order(from answer: String) -> [Int]? {
    let letters = answer.uppercased().filter { !$0.isWhitespace && $0 != "," }
    let indices = letters.compactMap { letter in
      (0..<events.count).first { Self.letter($0) == letter }
    }
    guard indices.count == letters.count, Set(indices).count == events.count,
      indices.count == events.count
    else { return nil }
    return indices
  }

  /// The order in which the events happened, by their first event line in `lines`, or `nil`
  /// when one of them never happened.
  func actualOrder(in lines: [String]) -> [Int]? {
    var firstLine: [(index: Int, line: Int)] = []
    for (index, event) in events.enumerated() {
      guard let line = lines.firstIndex(where: { $0.contains(event.marker) }) else { return nil }
      firstLine.append((index, line))
    }
    return firstLine.sorted { $0.line < $1.line }.map(\.index)
  }

  /// `order` as letters: "B D A C".
  static func letters(_ order: [Int]) -> String {
    order.map { String(letter($0)) }.joined(separator: " ")
  }
}
