import Glibc

/// The first line of a small file, without its newline; `nil` when it cannot be read.
package func _readFirstLine(_ path: String) -> String? {
  guard let file = fopen(path, "r") else { return nil }
  defer { fclose(file) }
  var buffer = [CChar](repeating: 0, count: 256)
  guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
  let bytes = buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }
  return String(decoding: bytes, as: UTF8.self)
}
