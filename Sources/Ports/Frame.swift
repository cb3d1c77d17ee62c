import Glibc

/// The wire format of named ports: a fixed, versioned header followed by the payload. All
/// integers are big-endian.
///
/// ```
/// offset size field
///      0    4 magic "RLMP"
///      4    1 version (1 or 2)
///      5    1 kind: 1 one-way, 2 request, 3 reply, 4 failure (payload: UTF-8 reason)
///      6    2 reserved, 0
///      8    4 message id (signed)
///     12    4 request id (matches a reply to its request; 0 for one-way)
///     16    4 payload length
/// version 2 only, the sender's trace context in the W3C `traceparent` layout:
///     20    1 trace-context version (0)
///     21   16 trace id (all zero: the frame carries no trace context)
///     37    8 parent span id: the sender's call-out (0: it ran in no traced call-out)
///     45    1 trace flags (bit 0: sampled)
///     46    2 reserved, 0
///  20/48    n payload
/// ```
///
/// A reader of version 1 refuses a version-2 frame at its fifth byte (`unsupported version
/// 2`), so a new frame never reaches an old handler with its trace context taken for payload.
struct Frame: Equatable {
  enum Kind: UInt8 {
    case oneWay = 1
    case request = 2
    case reply = 3
    case failure = 4
  }

  /// A W3C trace context: a 128-bit trace id (never all zero), the span of the call-out that
  /// sent the frame, and the trace flags.
  struct TraceContext: Equatable {
    var traceHigh: UInt64
    var traceLow: UInt64
    var spanID: UInt64
    var flags: UInt8 = 1
  }

  static let magic: [UInt8] = Array("RLMP".utf8)
  /// The newest version this code reads and writes; it reads every version from 1 up.
  static let version: UInt8 = 2
  /// The header of version 1 (the smallest header).
  static let headerSize = 20
  /// The header of version 2: version 1's and the trace context.
  static let tracedHeaderSize = 48

  /// The size of the header of `version`.
  static func headerSize(of version: UInt8) -> Int {
    version >= 2 ? tracedHeaderSize : headerSize
  }

  var version: UInt8 = Frame.version
  var kind: Kind
  var msgid: Int32
  var requestID: UInt32
  /// Version 2 only; `nil` is sent as an all-zero trace id.
  var context: TraceContext? = nil
  var payload: [UInt8]

  init(
    version: UInt8 = Frame.version, kind: Kind, msgid: Int32, requestID: UInt32,
    context: TraceContext? = nil, payload: [UInt8]
  ) {
    self.version = version
    self.kind = kind
    self.msgid = msgid
    self.requestID = requestID
    // Version 1 has no room for it.
    self.context = version >= 2 ? context : nil
    self.payload = payload
  }

  /// The bytes of the header and the payload.
  var size: Int { Self.headerSize(of: version) + payload.count }

  func encoded() -> [UInt8] {
    var bytes = Self.magic
    bytes.reserveCapacity(size)
    bytes += [version, kind.rawValue, 0, 0]
    Self.append(UInt32(bitPattern: msgid), to: &bytes)
    Self.append(requestID, to: &bytes)
    Self.append(UInt32(payload.count), to: &bytes)
    if version >= 2 {
      let context = context ?? TraceContext(traceHigh: 0, traceLow: 0, spanID: 0, flags: 0)
      bytes.append(0)
      Self.append(context.traceHigh, to: &bytes)
      Self.append(context.traceLow, to: &bytes)
      Self.append(context.spanID, to: &bytes)
      bytes += [context.flags, 0, 0]
    }
    bytes += payload
    return bytes
  }

  /// The outcome of looking at the front of a byte buffer.
  enum Parse: Equatable {
    /// Not enough bytes yet.
    case needMore
    /// A frame, and how many bytes it took.
    case frame(Frame, consumed: Int)
    /// The bytes are not a valid frame; the connection must be dropped.
    case malformed(String)
    /// The header announces a payload above the maximum; the connection must be dropped.
    case tooLarge(Int)
    /// The header announces a version this reader does not read (above `maxVersion`); the
    /// connection must be dropped.
    case unsupportedVersion(UInt8)
  }

  /// Parses one frame from `bytes[start...]`, refusing payloads above `maxPayload` (failure
  /// frames: above the larger of `maxPayload` and `maxFailurePayload`) and versions above
  /// `maxVersion` (1 reads exactly what a version-1 peer reads).
  static func parse(
    _ bytes: [UInt8], from start: Int, maxPayload: Int, maxFailurePayload: Int = 0,
    maxVersion: UInt8 = Frame.version
  ) -> Parse {
    let available = bytes.count - start
    // Check what is there as early as possible, so garbage is refused without waiting.
    for index in 0..<min(4, available) where bytes[start + index] != magic[index] {
      return .malformed("bad magic")
    }
    if available > 4 {
      let version = bytes[start + 4]
      guard version >= 1 else { return .malformed("unsupported version 0") }
      guard version <= maxVersion else { return .unsupportedVersion(version) }
    }
    guard available >= headerSize else { return .needMore }
    let version = bytes[start + 4]
    guard let kind = Kind(rawValue: bytes[start + 5]) else {
      return .malformed("unknown kind \(bytes[start + 5])")
    }
    guard bytes[start + 6] == 0, bytes[start + 7] == 0 else {
      return .malformed("reserved bytes are not zero")
    }
    let msgid = Int32(bitPattern: readUInt32(bytes, at: start + 8))
    let requestID = readUInt32(bytes, at: start + 12)
    let length = Int(readUInt32(bytes, at: start + 16))
    let limit = kind == .failure ? max(maxPayload, maxFailurePayload) : maxPayload
    guard length <= limit else { return .tooLarge(length) }
    let header = headerSize(of: version)
    guard available >= header else { return .needMore }
    var context: TraceContext?
    if version >= 2 {
      guard bytes[start + 20] == 0 else {
        return .malformed("unsupported trace-context version \(bytes[start + 20])")
      }
      guard bytes[start + 46] == 0, bytes[start + 47] == 0 else {
        return .malformed("reserved bytes are not zero")
      }
      let traced = TraceContext(
        traceHigh: readUInt64(bytes, at: start + 21), traceLow: readUInt64(bytes, at: start + 29),
        spanID: readUInt64(bytes, at: start + 37), flags: bytes[start + 45])
      if traced.traceHigh != 0 || traced.traceLow != 0 {
        context = traced
      } else if traced.spanID != 0 || traced.flags != 0 {
        // W3C: an all-zero trace id is invalid; here it means "no context", all of it zero.
        return .malformed("a trace context without a trace id")
      }
    }
    guard available >= header + length else { return .needMore }
    let payloadStart = start + header
    let frame = Frame(
      version: version, kind: kind, msgid: msgid, requestID: requestID, context: context,
      payload: Array(bytes[payloadStart..<payloadStart + length]))
    return .frame(frame, consumed: header + length)
  }

  private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
    bytes += [
      UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF),
    ]
  }

  private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
    append(UInt32(truncatingIfNeeded: value >> 32), to: &bytes)
    append(UInt32(truncatingIfNeeded: value), to: &bytes)
  }

  private static func readUInt32(_ bytes: [UInt8], at index: Int) -> UInt32 {
    UInt32(bytes[index]) << 24 | UInt32(bytes[index + 1]) << 16 | UInt32(bytes[index + 2]) << 8
      | UInt32(bytes[index + 3])
  }

  private static func readUInt64(_ bytes: [UInt8], at index: Int) -> UInt64 {
    UInt64(readUInt32(bytes, at: index)) << 32 | UInt64(readUInt32(bytes, at: index + 4))
  }
}
