import ArgumentParser

/// A duration on the command line: seconds (`3`, `2.5`) or with a unit (`500ms`, `3s`, `2m`,
/// `1m30s`).
struct DurationArgument: ExpressibleByArgument, Sendable, CustomStringConvertible {
  let duration: Duration

  init(_ duration: Duration) {
    self.duration = duration
  }

  init?(argument: String) {
    guard let seconds = Self.seconds(of: argument), seconds.isFinite, seconds > 0,
      seconds <= 86_400 * 365
    else { return nil }
    self.duration = .nanoseconds(Int64((seconds * 1e9).rounded()))
  }

  var seconds: Double {
    let parts = duration.components
    return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
  }

  var description: String { "\(seconds)s" }

  static var defaultCompletionKind: CompletionKind { .default }

  /// Parses `1m30s`, `500ms`, `2.5`, `3s`, `2m`, `1h`; `nil` for anything else.
  static func seconds(of text: String) -> Double? {
    // Decimal digits and points only: Double(_:) would also take "0x10", "1e3" or "inf".
    let allowed = Set("0123456789.mshMSH".unicodeScalars)
    guard !text.isEmpty, text.unicodeScalars.allSatisfy(allowed.contains) else { return nil }
    if let plain = Double(text) { return plain }
    var total = 0.0
    var number = ""
    var rest = Substring(text.lowercased())
    var sawUnit = false
    while let character = rest.first {
      if character.isNumber || character == "." {
        number.append(character)
        rest = rest.dropFirst()
        continue
      }
      guard let value = Double(number) else { return nil }
      let multiplier: Double
      if rest.hasPrefix("ms") {
        multiplier = 0.001
        rest = rest.dropFirst(2)
      } else if rest.hasPrefix("s") {
        multiplier = 1
        rest = rest.dropFirst()
      } else if rest.hasPrefix("m") {
        multiplier = 60
        rest = rest.dropFirst()
      } else if rest.hasPrefix("h") {
        multiplier = 3600
        rest = rest.dropFirst()
      } else {
        return nil
      }
      total += value * multiplier
      number = ""
      sawUnit = true
    }
    guard number.isEmpty, sawUnit else { return nil }
    return total
  }
}
