import Glibc

/// The text of a small `/proc` file (at most 512 bytes of it), or `nil` when it cannot be
/// read: one `read`, as the kernel produces these files whole for a read that is large
/// enough.
public func procFileText(_ path: String) -> String? {
  let descriptor = open(path, O_RDONLY | O_CLOEXEC)
  guard descriptor >= 0 else { return nil }
  defer { close(descriptor) }
  var bytes = [UInt8](repeating: 0, count: 512)
  let count = read(descriptor, &bytes, bytes.count)
  guard count > 0 else { return nil }
  return String(decoding: bytes[0..<count], as: UTF8.self)
}
