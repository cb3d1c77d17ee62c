import RunLoopCore
import Tracing

/// The W3C `traceparent` header: `00-<trace, 32 hex digits>-<span, 16>-<flags, 2>`.
enum TraceParent {
  static let key = "traceparent"

  /// The header of a sampled span (`01`): what a remote cause's ids stand for.
  static func format(trace: (high: UInt64, low: UInt64), span: UInt64) -> String {
    "00-\(hex(trace.high))\(hex(trace.low))-\(hex(span))-01"
  }

  /// The span and trace ids of a header; `nil` when it is not version 00 or names an
  /// invalid (all-zero) id.
  static func parse(_ header: String) -> CalloutIdentity? {
    let parts = header.split(separator: "-")
    guard parts.count == 4, parts[0] == "00", parts[1].utf8.count == 32,
      parts[2].utf8.count == 16,
      let high = UInt64(parts[1].prefix(16), radix: 16),
      let low = UInt64(parts[1].suffix(16), radix: 16),
      let span = UInt64(parts[2], radix: 16)
    else { return nil }
    return CalloutIdentity(span: span, traceID: (high, low))
  }

  private static func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }
}

/// Writes headers into a dictionary (the carrier of ``LoopSpans/traceParentIDs(_:)``).
struct HeaderInjector: Injector {
  func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
    carrier[key] = value
  }
}

/// Reads headers from a dictionary (the carrier a remote cause's ids are extracted from).
struct HeaderExtractor: Extractor {
  func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
