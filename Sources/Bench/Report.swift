import Foundation

/// One line of the results table.
///
/// `advantage` is how many times better ours is than CF (ours/CF for rates, CF/ours for times
/// and counts where lower is better), so every target reads "advantage at least X".
struct ResultRow: Codable {
  var suite: String
  var metric: String
  var unit: String
  var ours: Double?
  var cf: Double?
  var floor: Double?
  var advantage: Double?
  var target: String
  var pass: Bool?
  var note: String = ""
}

/// Collects the rows of a run and prints them as a table or writes them as JSON.
final class Report {
  private(set) var rows: [ResultRow] = []
  var machine: [String: String] = [:]

  func add(_ row: ResultRow) {
    rows.append(row)
    let verdict = row.pass.map { $0 ? "pass" : "FALLS SHORT" } ?? "-"
    print(
      "  \(row.suite) / \(row.metric): ours \(format(row.ours)) CF \(format(row.cf)) "
        + "floor \(format(row.floor)) \(row.unit) -> \(verdict)")
  }

  func printTable() {
    let header = ["suite", "metric", "unit", "ours", "CF", "floor", "ratio", "target", "result"]
    var lines: [[String]] = [header]
    for row in rows {
      lines.append([
        row.suite, row.metric, row.unit, format(row.ours), format(row.cf), format(row.floor),
        row.advantage.map { String(format: "%.2fx", $0) } ?? "-", row.target,
        row.pass.map { $0 ? "pass" : "falls short" } ?? "report",
      ])
    }
    var widths = [Int](repeating: 0, count: header.count)
    for line in lines {
      for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) }
    }
    func render(_ line: [String]) -> String {
      "| "
        + line.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
        .joined(separator: " | ") + " |"
    }
    print("")
    print(render(lines[0]))
    print("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|")
    for line in lines.dropFirst() { print(render(line)) }
    let notes = rows.filter { !$0.note.isEmpty }
    if !notes.isEmpty {
      print("\nNotes:")
      for row in notes { print("- \(row.suite) / \(row.metric): \(row.note)") }
    }
  }

  func writeJSON(to path: String) throws {
    struct Document: Codable {
      let machine: [String: String]
      let rows: [ResultRow]
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    let data = try encoder.encode(Document(machine: machine, rows: rows))
    try data.write(to: URL(fileURLWithPath: path))
  }
}

/// Numbers with three significant figures, thousands grouped, for the table.
func format(_ value: Double?) -> String {
  guard let value else { return "-" }
  if value == 0 { return "0" }
  let magnitude = abs(value)
  if magnitude >= 1000 {
    let formatter = NumberFormatter()
    formatter.numberStyle = .decimal
    formatter.maximumFractionDigits = 0
    formatter.usesSignificantDigits = true
    formatter.maximumSignificantDigits = 4
    return formatter.string(from: NSNumber(value: value)) ?? "\(value)"
  }
  if magnitude >= 100 { return String(format: "%.0f", value) }
  if magnitude >= 10 { return String(format: "%.1f", value) }
  if magnitude >= 1 { return String(format: "%.2f", value) }
  return String(format: "%.3g", value)
}
