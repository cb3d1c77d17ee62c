// libFuzzer target: the named-port frame parser and the reader that takes frames from a
// stream (Sources/Ports/Frame.swift, FrameReader.swift), compiled together with them by
// scripts/fuzz.sh.
//
// Any byte string must parse to one of the five outcomes without trapping; a frame must
// re-encode to exactly the bytes it used; and the reader fed the same bytes in pieces
// (sizes taken from the input) must give the same frames and the same verdict, holding no
// more than one unfinished frame between reads.

/// libFuzzer's entry point: one input per call.
@_cdecl("LLVMFuzzerTestOneInput")
public func frameParserFuzzTarget(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
  // The first byte picks the payload limit, so the tooLarge path is reached too.
  let maxPayload = bytes.isEmpty ? 1 : 1 + Int(bytes[0]) * 257
  let whole = parseWhole(bytes, maxPayload: maxPayload)
  let pieces = readInPieces(bytes, maxPayload: maxPayload)
  precondition(whole.frames == pieces.frames, "the reader split frames differently")
  precondition(whole.end == pieces.end, "the reader ended with another verdict")
  return 0
}

/// How a stream of bytes ended: needing more, or refused.
enum StreamEnd: Equatable {
  case needMore
  case malformed
  case tooLarge(Int)
  case unsupportedVersion(UInt8)
}

func parseWhole(_ bytes: [UInt8], maxPayload: Int) -> (frames: [Frame], end: StreamEnd) {
  var frames: [Frame] = []
  var start = 0
  while true {
    switch Frame.parse(bytes, from: start, maxPayload: maxPayload) {
    case .frame(let frame, let consumed):
      precondition(consumed == frame.size)
      precondition(start + consumed <= bytes.count)
      precondition(frame.payload.count <= maxPayload)
      precondition(frame.encoded() == Array(bytes[start..<start + consumed]))
      frames.append(frame)
      start += consumed
    case .needMore: return (frames, .needMore)
    case .malformed: return (frames, .malformed)
    case .tooLarge(let length):
      precondition(length > maxPayload)
      return (frames, .tooLarge(length))
    case .unsupportedVersion(let version):
      precondition(version > Frame.version)
      return (frames, .unsupportedVersion(version))
    }
  }
}

func readInPieces(_ bytes: [UInt8], maxPayload: Int) -> (frames: [Frame], end: StreamEnd) {
  var reader = FrameReader()
  var frames: [Frame] = []
  var offset = 0
  var piece = 0
  while offset < bytes.count {
    // Piece sizes from 1 to 64, chosen by the bytes themselves.
    let size = min(bytes.count - offset, 1 + Int(bytes[piece % bytes.count]) % 64)
    piece += 1
    reader.append(bytes[offset..<offset + size])
    offset += size
    taking: while true {
      switch reader.next(maxPayload: maxPayload) {
      case .frame(let frame, _): frames.append(frame)
      case .needMore: break taking
      case .malformed: return (frames, .malformed)
      case .tooLarge(let length): return (frames, .tooLarge(length))
      case .unsupportedVersion(let version): return (frames, .unsupportedVersion(version))
      }
    }
    reader.dropTaken()
    // Between reads it holds only the start of one unfinished frame.
    precondition(reader.count < Frame.tracedHeaderSize + maxPayload)
  }
  return (frames, .needMore)
}
