extension TraceRecord {
  /// The record as one line of JSON (schema version 1), keys in schema order, ending in a
  /// newline.
  ///
  /// ```swift
  /// print(record.jsonLine, terminator: "")
  /// ```
  public var jsonLine: String {
    var text = ""
    appendJSONLine(to: &text)
    return text
  }

  // Hand-written rather than JSONEncoder: a fixed key order (the schema's) makes the log
  // easy to read and to diff, and it is several times faster on the writer thread.
  func appendJSONLine(to text: inout String) {
    text += "{"
    var first = true
    for (key, value) in fields {
      if !first { text += "," }
      first = false
      text += "\""
      text += key
      text += "\":"
      if Self.numericKeys.contains(key) {
        text += value
      } else {
        Self.appendQuoted(value, to: &text)
      }
    }
    text += "}\n"
  }

  static let numericKeys: Set<String> = [
    "v", "seq", "ts_ns", "wall_ns", "pid", "tid", "loop", "iteration", "depth", "duration_ns",
    "due_ns", "lateness_ns",
  ]

  static func appendQuoted(_ value: String, to text: inout String) {
    text += "\""
    for scalar in value.unicodeScalars {
      switch scalar {
      case "\"": text += "\\\""
      case "\\": text += "\\\\"
      case "\n": text += "\\n"
      case "\r": text += "\\r"
      case "\t": text += "\\t"
      case let control where control.value < 0x20:
        let hex = String(control.value, radix: 16)
        text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: text.unicodeScalars.append(scalar)
      }
    }
    text += "\""
  }
}
