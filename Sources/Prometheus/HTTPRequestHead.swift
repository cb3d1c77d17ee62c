/// The part of an HTTP/1.1 request the endpoint reads: its request line. Headers are
/// skipped (a scrape needs none of them) and a body is never expected.
struct HTTPRequestHead: Equatable {
  var method: String
  /// The path, without a query string.
  var path: String

  /// The longest head taken; a longer one is answered 431 and the connection closed.
  static let maximumLength = 8192

  enum Parse: Equatable {
    /// The blank line that ends the head has not arrived yet.
    case incomplete
    case request(HTTPRequestHead)
    case malformed
    case tooLarge
  }

  /// Looks for a complete head at the start of `bytes`.
  static func parse(_ bytes: [UInt8]) -> Parse {
    guard let end = headEnd(in: bytes) else {
      return bytes.count > maximumLength ? .tooLarge : .incomplete
    }
    guard end <= maximumLength else { return .tooLarge }
    let lineEnd = bytes.firstIndex(of: UInt8(ascii: "\r")) ?? end
    let parts = bytes[..<lineEnd].split(
      separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
    guard parts.count == 3, !parts[0].isEmpty, parts[1].first == UInt8(ascii: "/"),
      parts[2].elementsEqual("HTTP/1.1".utf8) || parts[2].elementsEqual("HTTP/1.0".utf8),
      parts[0].allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) })
    else { return .malformed }
    let target = parts[1].split(separator: UInt8(ascii: "?"), maxSplits: 1).first ?? parts[1]
    return .request(
      HTTPRequestHead(
        method: String(decoding: parts[0], as: UTF8.self),
        path: String(decoding: target, as: UTF8.self)))
  }

  /// The index just past `\r\n\r\n`, if the head is complete.
  private static func headEnd(in bytes: [UInt8]) -> Int? {
    guard bytes.count >= 4 else { return nil }
    for index in 3..<bytes.count
    where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10
      && bytes[index - 3] == 13
    {
      return index + 1
    }
    return nil
  }
}
