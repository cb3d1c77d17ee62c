import Glibc

/// The bytes of a batch of JSON lines, written through a pointer: the writer thread encodes
/// every record, and on a 2-core machine its time is taken from the traced loop. Appending
/// to an `Array` (a uniqueness and a capacity check per piece, some thirty pieces a record)
/// would be the larger part of the encoding's cost; raw memory that the buffer owns, with
/// room reserved once per line, costs neither.
///
/// Used by one thread at a time. Callers ``reserve(_:)`` room for a whole line, then write
/// its pieces without further checks.
///
/// The writes here and in ``LineCursor`` are `@inline(__always)`: left to the optimizer,
/// the pieces of a line become calls, and encoding a record takes 1,918 instructions
/// instead of 1,757 (9% more; Docs/Performance.md, "What the annotations buy").
final class LineBuffer {
  private(set) var base: UnsafeMutablePointer<UInt8>
  private(set) var count = 0
  private(set) var capacity: Int

  init(capacity: Int = 1 << 16) {
    self.capacity = max(capacity, 64)
    self.base = .allocate(capacity: self.capacity)
  }

  deinit {
    base.deallocate()
  }

  /// Makes room for `extra` more bytes.
  func reserve(_ extra: Int) {
    guard count + extra > capacity else { return }
    var newCapacity = capacity * 2
    while newCapacity < count + extra { newCapacity *= 2 }
    let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
    newBase.update(from: base, count: count)
    base.deallocate()
    base = newBase
    capacity = newCapacity
  }

  /// Writes through a ``LineCursor`` (plain pointer writes, no per-piece access to the
  /// buffer) after reserving `room` bytes; the cursor must not write more than that.
  @inline(__always) func withCursor(reserving room: Int, _ body: (inout LineCursor) -> Void) {
    reserve(room)
    var cursor = LineCursor(base + count)
    body(&cursor)
    count = cursor.pointer - base
  }

  /// Empties the buffer; gives the memory back when a large batch made it grow.
  func removeAll(keepingAtMost limit: Int = 1 << 20) {
    count = 0
    if capacity > limit {
      base.deallocate()
      capacity = 1 << 16
      base = .allocate(capacity: capacity)
    }
  }

  /// The bytes written, for `write(2)`.
  var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

  @inline(__always) func write(_ byte: UInt8) {
    base[count] = byte
    count += 1
  }

  @inline(__always) func write(_ literal: StaticString) {
    (base + count).update(from: literal.utf8Start, count: literal.utf8CodeUnitCount)
    count += literal.utf8CodeUnitCount
  }

  @inline(__always) func write(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let source = bytes.baseAddress else { return }
    (base + count).update(from: source, count: bytes.count)
    count += bytes.count
  }

  @inline(__always) func write(_ bytes: [UInt8]) {
    bytes.withUnsafeBufferPointer { write($0) }
  }

  /// An unsigned integer in decimal (at most 20 bytes), written by the cursor's code.
  func writeDecimal(_ value: UInt64) {
    withCursor(reserving: 20) { $0.writeDecimal(value) }
  }

  /// A signed integer in decimal (at most 21 bytes).
  func writeDecimal(_ value: Int64) {
    withCursor(reserving: 21) { $0.writeDecimal(value) }
  }

  /// The most bytes ``writeQuoted(_:)`` writes for `byteCount` bytes of UTF-8.
  static func quotedLength(_ byteCount: Int) -> Int { byteCount * 6 + 2 }

  /// A JSON string: `"` and `\` escaped, `\n`, `\r`, `\t` by name, other control characters
  /// as `\u00XX`; everything else (including non-ASCII UTF-8) as it is. Room for
  /// ``quotedLength(_:)`` bytes must be reserved.
  func writeQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
    write(UInt8(ascii: "\""))
    var clean = 0
    for index in utf8.indices {
      let byte = utf8[index]
      guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
        continue
      }
      write(UnsafeBufferPointer(rebasing: utf8[clean..<index]))
      clean = index + 1
      switch byte {
      case UInt8(ascii: "\""): write(#"\""#)
      case UInt8(ascii: "\\"): write(#"\\"#)
      case UInt8(ascii: "\n"): write(#"\n"#)
      case UInt8(ascii: "\r"): write(#"\r"#)
      case UInt8(ascii: "\t"): write(#"\t"#)
      default:
        write(#"\u00"#)
        write(Self.hexDigit(byte >> 4))
        write(Self.hexDigit(byte & 0xF))
      }
    }
    write(UnsafeBufferPointer(rebasing: utf8[clean...]))
    write(UInt8(ascii: "\""))
  }

  /// Reserves room for, and writes, `string` quoted.
  func writeQuoted(_ string: String) {
    var string = string
    string.withUTF8 { utf8 in
      reserve(Self.quotedLength(utf8.count))
      writeQuoted(utf8)
    }
  }

  static func hexDigit(_ value: UInt8) -> UInt8 {
    value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
  }

  /// `string` as a quoted JSON string, for caching.
  static func quoted(_ string: String) -> [UInt8] {
    let buffer = LineBuffer(capacity: 64)
    buffer.writeQuoted(string)
    return Array(buffer.bytes)
  }
}

/// Writes bytes at a pointer with room reserved by ``LineBuffer/withCursor(reserving:_:)``;
/// its per-field writes are always inlined, for the reason ``LineBuffer`` gives, except
/// `writeHex16`, a 16-step loop written only for the span and trace fields of traced call-outs.
struct LineCursor {
  var pointer: UnsafeMutablePointer<UInt8>

  init(_ pointer: UnsafeMutablePointer<UInt8>) {
    self.pointer = pointer
  }

  @inline(__always) mutating func write(_ literal: StaticString) {
    pointer.update(from: literal.utf8Start, count: literal.utf8CodeUnitCount)
    pointer += literal.utf8CodeUnitCount
  }

  @inline(__always) mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let source = bytes.baseAddress else { return }
    pointer.update(from: source, count: bytes.count)
    pointer += bytes.count
  }

  /// An unsigned integer in decimal (at most 20 bytes).
  @inline(__always) mutating func writeDecimal(_ value: UInt64) {
    if value < 10 {
      pointer.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value)
      pointer += 1
      return
    }
    var digits = 0
    var rest = value
    while rest != 0 {
      digits += 1
      rest /= 10
    }
    rest = value
    var position = pointer + digits
    while rest != 0 {
      position -= 1
      position.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
      rest /= 10
    }
    pointer += digits
  }

  /// A 64-bit id as 16 lowercase hex digits, zero-padded (a span, half a trace id).
  mutating func writeHex16(_ value: UInt64) {
    var shift: UInt64 = 60
    for _ in 0..<16 {
      pointer.pointee = LineBuffer.hexDigit(UInt8(truncatingIfNeeded: value >> shift) & 0xF)
      pointer += 1
      shift &-= 4
    }
  }

  /// A signed integer in decimal (at most 20 bytes).
  @inline(__always) mutating func writeDecimal(_ value: Int64) {
    if value < 0 {
      pointer.pointee = UInt8(ascii: "-")
      pointer += 1
    }
    writeDecimal(value.magnitude)
  }
}
