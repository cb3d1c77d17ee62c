/// `duration` in milliseconds with one decimal, for people (`"121.9 ms"`).
func milliseconds(_ duration: Duration) -> String {
  let value = DurationArgument(duration).seconds * 1000
  return "\((value * 10).rounded() / 10) ms"
}

/// `nanoseconds` in milliseconds with two decimals, without the unit (`"121.94"`): the
/// tables' figures.
func milliseconds(nanoseconds: Int64) -> String {
  "\((Double(nanoseconds) / 1e4).rounded() / 100)"
}

/// Text helpers for the demo's tables and narration.
extension String {
  /// The string with `pad` in front, up to `width` characters.
  func leftPadded(to width: Int, with pad: Character) -> String {
    count >= width ? self : String(repeating: pad, count: width - count) + self
  }

  /// The string with spaces after it, up to `width` characters.
  func padding(toLength width: Int) -> String {
    count >= width ? self : self + String(repeating: " ", count: width - count)
  }

  /// The string with its first `target` replaced by `replacement`.
  func replacingFirst(_ target: Character, with replacement: String) -> String {
    guard let index = firstIndex(of: target) else { return self }
    return String(self[..<index]) + replacement + String(self[self.index(after: index)...])
  }
}
