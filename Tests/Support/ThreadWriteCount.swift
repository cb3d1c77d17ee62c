import Glibc

/// How many `write` system calls (and their kin: `pwrite`, `writev`) the calling thread has
/// made, as the kernel counts them in `/proc/thread-self/io` (`syscw`); `nil` when the file
/// cannot be read. Reading it makes read calls only, so a difference of two readings counts
/// the writes made between them.
public func writeSystemCallsOfThisThread() -> UInt64? {
  let descriptor = open("/proc/thread-self/io", O_RDONLY | O_CLOEXEC)
  guard descriptor >= 0 else { return nil }
  defer { close(descriptor) }
  var bytes = [UInt8](repeating: 0, count: 512)
  let count = read(descriptor, &bytes, bytes.count)
  guard count > 0 else { return nil }
  let text = String(decoding: bytes[0..<count], as: UTF8.self)
  for line in text.split(separator: "\n") where line.hasPrefix("syscw:") {
    return UInt64(line.dropFirst("syscw:".count).trimmingCharacters(in: " "))
  }
  return nil
}

extension Substring {
  fileprivate func trimmingCharacters(in set: Character) -> Substring {
    var trimmed = self
    while trimmed.first == set { trimmed = trimmed.dropFirst() }
    while trimmed.last == set { trimmed = trimmed.dropLast() }
    return trimmed
  }
}
