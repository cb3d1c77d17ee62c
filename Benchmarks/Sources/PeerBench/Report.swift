import Foundation

/// One line of the figures: one piece of work, measured for every side that can do it.
struct ResultRow: Codable {
  var work: String
  var unit: String
  /// Each side's median; a side that has no such API is absent.
  var values: [String: Double]
  /// Whether a larger value is better (rates) or worse (times, bytes, counts).
  var higherIsBetter: Bool
  /// The target this row is held to, or "report".
  var target: String = "report"
  /// Whether ours met the target (nil for report rows, or when ours was not measured).
  var pass: Bool?
  var note: String = ""
  /// Sides that were measured but gave no finite figure: a broken side, which fails the run.
  var missing: [String] = []

  init(
    work: String, unit: String, values: [Peer: Double], higherIsBetter: Bool,
    target: String = "report", pass: Bool? = nil, note: String = ""
  ) {
    self.work = work
    self.unit = unit
    self.values = Dictionary(
      uniqueKeysWithValues: values.filter { $0.value.isFinite }.map { ($0.key.rawValue, $0.value) })
    missing = values.filter { !$0.value.isFinite }.map(\.key.rawValue).sorted()
    self.higherIsBetter = higherIsBetter
    self.target = target
    self.pass = pass
    self.note = note
  }

  func value(_ peer: Peer) -> Double? { values[peer.rawValue] }

  /// How many times better `a` did than `b` on this row (above 1: `a` did better).
  func advantage(of a: Peer, over b: Peer) -> Double? {
    // A count of (nearly) nothing has no meaningful ratio.
    guard let x = value(a), let y = value(b), x >= 0.01, y >= 0.01 else { return nil }
    return higherIsBetter ? x / y : y / x
  }
}

/// Collects the rows of a run; prints them as tables, writes them as JSON.
final class Report {
  private(set) var rows: [ResultRow] = []
  var machine: [String: String] = [:]
  let columns: [Peer] = Peer.allCases

  func add(_ row: ResultRow) {
    rows.append(row)
    let cells = columns.compactMap { peer in
      row.value(peer).map { "\(peer.rawValue) \(format($0))" }
    }
    let verdict = row.pass.map { $0 ? " -> pass" : " -> FALLS SHORT" } ?? ""
    print("  \(row.work): \(cells.joined(separator: ", ")) \(row.unit)\(verdict)")
  }

  /// Rows where a measured side gave no finite figure, as "work: sides" lines.
  var failures: [String] {
    rows.filter { !$0.missing.isEmpty }.map { "\($0.work): \($0.missing.joined(separator: ", "))" }
  }

  func printTables() {
    print("\nFigures (medians of interleaved rounds):")
    printTable(
      header: ["work", "unit"] + columns.map(\.rawValue) + ["target", "result"],
      lines: rows.map { row in
        [row.work, row.unit] + columns.map { format(row.value($0)) } + [
          row.target, row.pass.map { $0 ? "pass" : "falls short" } ?? "report",
        ]
      })
    let withFloor = rows.filter { ($0.value(.floor) ?? 0) >= 0.01 }
    if !withFloor.isEmpty {
      print(
        "\nOf the floor (each side's rate over the floor's, or the floor's cost over the side's;"
          + " 1 is as cheap as the bare calls):")
      let sides = columns.filter { $0 != .floor }
      printTable(
        header: ["work"] + sides.map(\.rawValue),
        lines: withFloor.map { row in
          [row.work] + sides.map { ratio(row.advantage(of: $0, over: .floor)) }
        })
    }
    print("\nOurs against each (how many times better ours did; above 1 favours ours):")
    let others = columns.filter { $0 != .ours }
    printTable(
      header: ["work"] + others.map(\.rawValue),
      lines: rows.filter { $0.value(.ours) != nil }.map { row in
        [row.work] + others.map { ratio(row.advantage(of: .ours, over: $0)) }
      })
    let notes = rows.filter { !$0.note.isEmpty }
    if !notes.isEmpty {
      print("\nNotes:")
      for row in notes { print("- \(row.work): \(row.note)") }
    }
  }

  private func printTable(header: [String], lines: [[String]]) {
    var widths = header.map(\.count)
    for line in lines {
      for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) }
    }
    func render(_ line: [String]) -> String {
      "| "
        + line.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
        .joined(separator: " | ") + " |"
    }
    print(render(header))
    print("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|")
    for line in lines { print(render(line)) }
  }

  func writeJSON(to path: String) throws {
    struct Document: Codable {
      let machine: [String: String]
      let rows: [ResultRow]
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(Document(machine: machine, rows: rows)).write(
      to: URL(fileURLWithPath: path))
  }
}

/// A ratio with two decimals, or "-".
func ratio(_ value: Double?) -> String {
  value.map { String(format: "%.2f", $0) } ?? "-"
}

/// Numbers with three or four significant figures, thousands grouped, "-" for none.
func format(_ value: Double?) -> String {
  guard let value, !value.isNaN else { return "-" }
  let magnitude = abs(value)
  if magnitude >= 1000 {
    let digits = String(Int(value.rounded()))
    var grouped = ""
    for (index, digit) in digits.reversed().enumerated() {
      if index > 0, index % 3 == 0, digit != "-" { grouped.append(",") }
      grouped.append(digit)
    }
    return String(grouped.reversed())
  }
  if magnitude >= 100 { return String(format: "%.0f", value) }
  if magnitude >= 10 { return String(format: "%.1f", value) }
  return String(format: "%.2f", value)
}
