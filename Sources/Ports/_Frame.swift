import Glibc

/// The wire format of named ports: a fixed, versioned header followed by the payload. All
/// integers are big-endian.
///
/// ```
/// offset size field
///      0    4 magic "RLMP"
///      4    1 version (1)
///      5    1 kind: 1 one-way, 2 request, 3 reply, 4 failure (payload: UTF-8 reason)
///      6    2 reserved, 0
///      8    4 message id (signed)
///     12    4 request id (matches a reply to its request; 0 for one-way)
///     16    4 payload length
///     20    n payload
/// ```
struct _Frame: Equatable {
  enum Kind: UInt8 {
    case oneWay = 1
    case request = 2
    case reply = 3
    case failure = 4
  }

  static let magic: [UInt8] = Array("RLMP".utf8)
  static let version: UInt8 = 1
  static let headerSize = 20

  var kind: Kind
  var msgid: Int32
  var requestID: UInt32
  var payload: [UInt8]

  func encoded() -> [UInt8] {
    var bytes = Self.magic
    bytes.reserveCapacity(Self.headerSize + payload.count)
    bytes += [Self.version, kind.rawValue, 0, 0]
    Self.append(UInt32(bitPattern: msgid), to: &bytes)
    Self.append(requestID, to: &bytes)
    Self.append(UInt32(payload.count), to: &bytes)
    bytes += payload
    return bytes
  }

  /// The outcome of looking at the front of a byte buffer.
  enum Parse: Equatable {
    /// Not enough bytes yet.
    case needMore
    /// A frame, and how many bytes it took.
    case frame(_Frame, consumed: Int)
    /// The bytes are not a valid frame; the connection must be dropped.
    case malformed(String)
    /// The header announces a payload above the maximum; the connection must be dropped.
    case tooLarge(Int)
  }

  /// Parses one frame from `bytes[start...]`, refusing payloads above `maxPayload`.
  static func parse(_ bytes: [UInt8], from start: Int, maxPayload: Int) -> Parse {
    let available = bytes.count - start
    // Check what is there as early as possible, so garbage is refused without waiting.
    for index in 0..<min(4, available) where bytes[start + index] != magic[index] {
      return .malformed("bad magic")
    }
    if available > 4, bytes[start + 4] != version {
      return .malformed("unsupported version \(bytes[start + 4])")
    }
    guard available >= headerSize else { return .needMore }
    guard let kind = Kind(rawValue: bytes[start + 5]) else {
      return .malformed("unknown kind \(bytes[start + 5])")
    }
    guard bytes[start + 6] == 0, bytes[start + 7] == 0 else {
      return .malformed("reserved bytes are not zero")
    }
    let msgid = Int32(bitPattern: readUInt32(bytes, at: start + 8))
    let requestID = readUInt32(bytes, at: start + 12)
    let length = Int(readUInt32(bytes, at: start + 16))
    guard length <= maxPayload else { return .tooLarge(length) }
    guard available >= headerSize + length else { return .needMore }
    let payloadStart = start + headerSize
    let frame = _Frame(
      kind: kind, msgid: msgid, requestID: requestID,
      payload: Array(bytes[payloadStart..<payloadStart + length]))
    return .frame(frame, consumed: headerSize + length)
  }

  private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
    bytes += [
      UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF),
    ]
  }

  private static func readUInt32(_ bytes: [UInt8], at index: Int) -> UInt32 {
    UInt32(bytes[index]) << 24 | UInt32(bytes[index + 1]) << 16 | UInt32(bytes[index + 2]) << 8
      | UInt32(bytes[index + 3])
  }
}
