/// The bytes received on one named-port connection that are not yet taken as frames.
///
/// Frames are taken from the front; what they used is dropped once a read's frames are
/// all taken, so the reader holds at most one unfinished frame (never more than its
/// header announces, and never allocated ahead from that announcement) plus one read.
/// Both sides use it: the server per connection, the client while it waits for a reply.
struct FrameReader {
  // Parsed bytes before `start` are dropped by `dropTaken()`.
  private var bytes: [UInt8] = []
  private var start = 0

  /// The bytes held: those of an unfinished frame once `dropTaken()` ran.
  var count: Int { bytes.count }

  /// Whether no frame is under way (nothing held that is not taken yet).
  var isBetweenFrames: Bool { start == bytes.count }

  /// Adds bytes just read.
  mutating func append(_ chunk: ArraySlice<UInt8>) {
    bytes += chunk
  }

  /// Takes the next complete frame, or tells why there is none (``Frame/Parse``). After a
  /// `malformed`, `tooLarge` or `unsupportedVersion` the connection is unusable: the caller drops it.
  mutating func next(
    maxPayload: Int, maxFailurePayload: Int = 0, maxVersion: UInt8 = Frame.version
  ) -> Frame.Parse {
    let result = Frame.parse(
      bytes, from: start, maxPayload: maxPayload, maxFailurePayload: maxFailurePayload,
      maxVersion: maxVersion)
    if case .frame(_, let consumed) = result { start += consumed }
    return result
  }

  /// Drops the bytes of frames already taken. Call it when `next` says `needMore`: what
  /// moves is the start of an unfinished frame, at most one read, so each byte received is
  /// moved at most once.
  mutating func dropTaken() {
    guard start > 0 else { return }
    let unfinished = bytes.count - start
    if unfinished == 0 {
      // A buffer grown for a large frame goes back to the allocator.
      bytes.removeAll(keepingCapacity: bytes.capacity <= Self.keptCapacity)
    } else if bytes.capacity > 4 * max(unfinished, Self.keptCapacity) {
      bytes = Array(bytes[start...])
    } else {
      bytes.removeFirst(start)
    }
    start = 0
  }

  /// The capacity kept between frames: one read's worth.
  static let keptCapacity = 65536
}
