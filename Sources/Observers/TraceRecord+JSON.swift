extension TraceRecord {
  /// The record as one line of JSON (schema version 1), keys in schema order, ending in a
  /// newline.
  ///
  /// ```swift
  /// print(record.jsonLine, terminator: "")
  /// ```
  public var jsonLine: String {
    var bytes: [UInt8] = []
    appendJSONLine(to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  // Hand-written rather than JSONEncoder: a fixed key order (the schema's) makes the log
  // easy to read and to diff. Written as bytes, not String appends: the writer thread
  // encodes every record, and on a 2-core machine its time is taken from the traced loop
  // (String appends and a Set lookup per key were most of its profile in runloop-bench).
  func appendJSONLine(to bytes: inout [UInt8]) {
    bytes.append(contentsOf: #"{"v":"#.utf8)
    Self.appendInteger(Int64(version), to: &bytes)
    bytes.append(contentsOf: #","run":"#.utf8)
    Self.appendQuoted(run, to: &bytes)
    bytes.append(contentsOf: #","seq":"#.utf8)
    Self.appendInteger(seq, to: &bytes)
    bytes.append(contentsOf: #","record":"#.utf8)
    Self.appendQuoted(record.rawValue, to: &bytes)
    bytes.append(contentsOf: #","ts_ns":"#.utf8)
    Self.appendInteger(timestamp, to: &bytes)
    bytes.append(contentsOf: #","wall_ns":"#.utf8)
    Self.appendInteger(wallTime, to: &bytes)
    bytes.append(contentsOf: #","pid":"#.utf8)
    Self.appendInteger(Int64(pid), to: &bytes)
    bytes.append(contentsOf: #","tid":"#.utf8)
    Self.appendInteger(Int64(tid), to: &bytes)
    bytes.append(contentsOf: #","thread":"#.utf8)
    Self.appendQuoted(thread, to: &bytes)
    bytes.append(contentsOf: #","loop":"#.utf8)
    Self.appendInteger(loop, to: &bytes)
    bytes.append(contentsOf: #","mode":"#.utf8)
    Self.appendQuoted(mode, to: &bytes)
    bytes.append(contentsOf: #","iteration":"#.utf8)
    Self.appendInteger(iteration, to: &bytes)
    bytes.append(contentsOf: #","depth":"#.utf8)
    Self.appendInteger(Int64(depth), to: &bytes)
    if let activity {
      bytes.append(contentsOf: #","activity":"#.utf8)
      Self.appendQuoted(activity, to: &bytes)
    }
    if let calloutKind {
      bytes.append(contentsOf: #","callout_kind":"#.utf8)
      Self.appendQuoted(calloutKind, to: &bytes)
    }
    if let calloutName {
      bytes.append(contentsOf: #","callout_name":"#.utf8)
      Self.appendQuoted(calloutName, to: &bytes)
    }
    if let duration {
      bytes.append(contentsOf: #","duration_ns":"#.utf8)
      Self.appendInteger(duration, to: &bytes)
    }
    if let dueAt {
      bytes.append(contentsOf: #","due_ns":"#.utf8)
      Self.appendInteger(dueAt, to: &bytes)
    }
    if let lateness {
      bytes.append(contentsOf: #","lateness_ns":"#.utf8)
      Self.appendInteger(lateness, to: &bytes)
    }
    bytes.append(contentsOf: "}\n".utf8)
  }

  /// A signed integer in decimal.
  static func appendInteger(_ value: Int64, to bytes: inout [UInt8]) {
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    appendInteger(value.magnitude, to: &bytes)
  }

  /// An unsigned integer in decimal.
  static func appendInteger(_ value: UInt64, to bytes: inout [UInt8]) {
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for the 20 digits of UInt64.max
    withUnsafeMutableBytes(of: &digits) { buffer in
      var rest = value
      var start = buffer.count
      repeat {
        start -= 1
        buffer[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
        rest /= 10
      } while rest != 0
      bytes.append(contentsOf: buffer[start...])
    }
  }

  /// A JSON string: `"` and `\` escaped, `\n`, `\r`, `\t` by name, other control characters
  /// as `\u00XX`; everything else (including non-ASCII UTF-8) as it is.
  static func appendQuoted(_ value: String, to bytes: inout [UInt8]) {
    bytes.append(UInt8(ascii: "\""))
    var value = value
    value.withUTF8 { utf8 in
      var clean = 0
      for (index, byte) in utf8.enumerated() {
        guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
          continue
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean..<index]))
        clean = index + 1
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
        case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
        case UInt8(ascii: "\n"): bytes.append(contentsOf: #"\n"#.utf8)
        case UInt8(ascii: "\r"): bytes.append(contentsOf: #"\r"#.utf8)
        case UInt8(ascii: "\t"): bytes.append(contentsOf: #"\t"#.utf8)
        default:
          let hex = Array("0123456789abcdef".utf8)
          bytes.append(contentsOf: #"\u00"#.utf8)
          bytes.append(hex[Int(byte >> 4)])
          bytes.append(hex[Int(byte & 0xF)])
        }
      }
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean...]))
    }
    bytes.append(UInt8(ascii: "\""))
  }
}
